//! PNG plots: the SVG plot rasterised with resvg, text set in the system's fonts.

use super::{PlotKind, ReportError};
use resvg::tiny_skia::{Color, Pixmap, Transform};
use resvg::usvg::{Options, Tree};

/// Pixels per SVG unit: sharp on high-density screens and in print.
const SCALE: f32 = 2.0;

/// Sans-serif families tried, in order, for the plots' generic `sans-serif` (fontdb's
/// default, Arial, is rarely installed on Linux).
const SANS: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Noto Sans",
    "Cantarell",
    "FreeSans",
];

/// Draws `svg` (a standalone plot) onto a white PNG.
pub(super) fn rasterise(svg: &str, plot: PlotKind) -> Result<Vec<u8>, ReportError> {
    let mut options = Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    let family = SANS
        .into_iter()
        .find(|wanted| {
            fonts
                .faces()
                .any(|face| face.families.iter().any(|(name, _)| name == wanted))
        })
        .or_else(|| {
            fonts
                .faces()
                .next()
                .and_then(|face| face.families.first())
                .map(|(name, _)| name.as_str())
        })
        .map(str::to_string)
        .ok_or(ReportError::NoFont(plot))?;
    fonts.set_sans_serif_family(family);
    let bug = |message: String| ReportError::Plot {
        plot: plot.name(),
        message,
    };
    let tree = Tree::from_str(svg, &options).map_err(|e| bug(e.to_string()))?;
    let size = tree.size().to_int_size();
    let (width, height) = (
        (size.width() as f32 * SCALE).ceil() as u32,
        (size.height() as f32 * SCALE).ceil() as u32,
    );
    let mut pixmap =
        Pixmap::new(width, height).ok_or_else(|| bug(format!("empty plot ({width}x{height})")))?;
    pixmap.fill(Color::WHITE);
    resvg::render(
        &tree,
        Transform::from_scale(SCALE, SCALE),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| bug(e.to_string()))
}
