//! Drawing a [`Chart`] as SVG with `plotters`: axes with units, log axes labelled at
//! powers of ten, and the legend below the plot so it never hides a line.
//!
//! Colours come from a fixed palette readable with colour-vision deficiencies: the
//! Okabe–Ito colours first, then Paul Tol's "muted" ones; a stream keeps its colour in
//! every plot and in the tables' swatches.

use super::chart::{Axis, Chart, COLUMNS};
use super::ReportError;
use latlab_model::text::xml_escaped;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of every plot, in pixels.
const WIDTH: u32 = 960;
/// Height of the plot without its legend.
const PLOT_HEIGHT: u32 = 440;
/// Height of one legend row.
const LEGEND_ROW: u32 = 22;
/// Space around the legend.
const LEGEND_PAD: u32 = 14;
/// Legend labels longer than this are shortened.
const LEGEND_CHARS: usize = 110;
/// The font of every text: the system's sans-serif.
const FONT: &str = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, Arial, sans-serif";

/// Okabe & Ito (2008), then Tol's muted scheme (2021): distinguishable with the common
/// colour-vision deficiencies and legible on white.
const PALETTE: [(u8, u8, u8); 16] = [
    (0x00, 0x72, 0xB2), // blue
    (0xD5, 0x5E, 0x00), // vermillion
    (0x00, 0x9E, 0x73), // bluish green
    (0xCC, 0x79, 0xA7), // reddish purple
    (0xE6, 0x9F, 0x00), // orange
    (0x56, 0xB4, 0xE9), // sky blue
    (0x00, 0x00, 0x00), // black
    (0xB8, 0xA5, 0x00), // yellow, darkened to be seen on white
    (0x33, 0x22, 0x88), // indigo
    (0x11, 0x77, 0x33), // green
    (0x88, 0x22, 0x55), // wine
    (0x44, 0xAA, 0x99), // teal
    (0x99, 0x99, 0x33), // olive
    (0xAA, 0x44, 0x99), // purple
    (0xCC, 0x66, 0x77), // rose
    (0x88, 0xCC, 0xEE), // cyan
];

fn colour(index: usize) -> RGBColor {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    RGBColor(r, g, b)
}

/// A palette colour as CSS (`#0072B2`), for the swatches of tables.
pub(crate) fn colour_hex(index: usize) -> String {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    format!("#{r:02X}{g:02X}{b:02X}")
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Where a plot's description is, for assistive technology.
pub(crate) enum Description<'a> {
    /// In the SVG itself, as its `<desc>` (a standalone plot).
    Inside,
    /// In the page, in the element with this id (a figure's caption).
    Elsewhere(&'a str),
}

/// The chart as an `<svg>` element, to place in a page: an image (`role="img"`) named by
/// its `<title>`, the chart's caption, and described by its explanation. `id` is
/// unique in the page; the title's id is derived from it.
pub(crate) fn svg(
    chart: &Chart,
    id: &str,
    description: Description,
) -> Result<String, ReportError> {
    let legend = Legend::of(chart);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, PLOT_HEIGHT + legend.height()))
            .into_drawing_area();
        draw(&root, chart, &legend)
            .and_then(|()| root.present())
            .map_err(|e| ReportError::Plot {
                plot: chart.name,
                message: e.to_string(),
            })?;
    }
    Ok(accessible(&out, chart, id, description))
}

/// `svg` (as plotters writes it) with its accessible name and description: the root
/// element gets `role="img"` and ARIA references, and the title (and a description
/// kept inside) become its first children.
fn accessible(svg: &str, chart: &Chart, id: &str, description: Description) -> String {
    let title_id = format!("{id}-title");
    let (described_by, desc) = match description {
        Description::Inside => (
            format!("{id}-desc"),
            format!(
                "<desc id=\"{id}-desc\">{}</desc>\n",
                xml_escaped(&chart.explanation)
            ),
        ),
        Description::Elsewhere(caption_id) => (caption_id.to_string(), String::new()),
    };
    let Some(end) = svg.find('>') else {
        return svg.to_string();
    };
    let (open, rest) = svg.split_at(end);
    format!(
        "{open} role=\"img\" aria-labelledby=\"{title_id}\" aria-describedby=\"{described_by}\">\n\
         <title id=\"{title_id}\">{}</title>\n{desc}{}",
        xml_escaped(&chart.caption),
        &rest[1..]
    )
}

/// The chart as a standalone SVG document.
pub(crate) fn standalone(chart: &Chart) -> Result<String, ReportError> {
    Ok(format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}",
        svg(chart, "plot", Description::Inside)?
    ))
}

fn draw(root: &Area, chart: &Chart, legend: &Legend) -> DrawResult {
    root.fill(&WHITE)?;
    let (plot_area, legend_area) = root.split_vertically(PLOT_HEIGHT);
    if chart.series.is_empty() {
        let centre = Pos::new(HPos::Center, VPos::Center);
        let middle = (WIDTH as i32) / 2;
        plot_area.draw(&Text::new(
            chart.caption.clone(),
            (middle, 24),
            (FONT, 18).into_font().color(&BLACK).pos(centre),
        ))?;
        plot_area.draw(&Text::new(
            "no samples",
            (middle, PLOT_HEIGHT as i32 / 2),
            (FONT, 16)
                .into_font()
                .color(&RGBColor(0x55, 0x55, 0x55))
                .pos(centre),
        ))?;
        return Ok(());
    }
    let area = &plot_area;
    // Log axes are labelled at every power of ten, linear ones at round numbers.
    match (chart.x_axis, chart.y_axis) {
        (Axis::Linear { max: x }, Axis::Linear { max: y }) => {
            draw_lines(area, chart, (0f64..x, axis_number), (0f64..y, axis_number))?
        }
        (Axis::Linear { max: x }, Axis::Log { min, max }) => draw_lines(
            area,
            chart,
            (0f64..x, axis_number),
            ((min..max).log_scale(), power_of_ten),
        )?,
        (Axis::Log { min, max }, Axis::Linear { max: y }) => draw_lines(
            area,
            chart,
            ((min..max).log_scale(), power_of_ten),
            (0f64..y, axis_number),
        )?,
        (Axis::Log { min: x0, max: x1 }, Axis::Log { min: y0, max: y1 }) => draw_lines(
            area,
            chart,
            ((x0..x1).log_scale(), power_of_ten),
            ((y0..y1).log_scale(), power_of_ten),
        )?,
        (Axis::Dates { min, max }, Axis::Linear { max: y }) => {
            draw_lines(area, chart, (min..max, day_label), (0f64..y, axis_number))?
        }
        (Axis::Dates { min, max }, Axis::Log { min: y0, max: y1 }) => draw_lines(
            area,
            chart,
            (min..max, day_label),
            ((y0..y1).log_scale(), power_of_ten),
        )?,
        // Dates are only ever the x axis: no chart has them upwards.
        (_, Axis::Dates { .. }) => {}
    }
    legend.draw(&legend_area, chart)
}

/// A label for an axis' value.
type Labeller = fn(&f64) -> String;

/// Axes, grid and lines: the x axis is `x.0` labelled by `x.1`, the y axis likewise.
fn draw_lines<X, Y>(area: &Area, chart: &Chart, x: (X, Labeller), y: (Y, Labeller)) -> DrawResult
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let ((x_range, x_label), (y_range, y_label)) = (x, y);
    let mut plot = ChartBuilder::on(area)
        .caption(&chart.caption, (FONT, 18))
        .margin(12)
        .margin_right(28)
        .x_label_area_size(52)
        .y_label_area_size(78)
        .build_cartesian_2d(x_range, y_range)?;
    plot.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .x_labels(12)
        .y_labels(12)
        .axis_desc_style((FONT, 15))
        .label_style((FONT, 13))
        .axis_style(RGBColor(0x59, 0x63, 0x6E))
        .bold_line_style(RGBColor(0xD0, 0xD5, 0xDB))
        .light_line_style(RGBColor(0xEE, 0xF0, 0xF3))
        .draw()?;
    // Thin lines when there are many, or when they are dense (a long run's timeline
    // moves at nearly every pixel column): a thick zigzag hides the lines behind it.
    let dense = chart
        .series
        .iter()
        .any(|s| s.segments.iter().map(Vec::len).sum::<usize>() > COLUMNS / 3);
    let stroke = if chart.series.len() > 6 || dense {
        1
    } else {
        2
    };
    for series in &chart.series {
        let style = colour(series.colour).stroke_width(stroke);
        for segment in &series.segments {
            plot.draw_series(LineSeries::new(segment.iter().copied(), style))?;
        }
        for mark in &series.marks {
            let style = match mark.hollow {
                true => colour(series.colour).stroke_width(2),
                false => colour(series.colour).filled(),
            };
            plot.draw_series(std::iter::once(Circle::new(mark.at, 4, style)))?;
            if let Some(label) = &mark.label {
                // Right of the point, or left of it in the plot's right third.
                let (dx, anchor) = match chart.x_axis.column(mark.at.0) > COLUMNS * 2 / 3 {
                    true => (-8, Pos::new(HPos::Right, VPos::Center)),
                    false => (8, Pos::new(HPos::Left, VPos::Center)),
                };
                let font = (FONT, 13).into_font().color(&BLACK).pos(anchor);
                plot.draw_series(std::iter::once(
                    EmptyElement::at(mark.at) + Text::new(label.clone(), (dx, -14), font),
                ))?;
            }
        }
    }
    Ok(())
}

/// The label of a date axis at `days` since the epoch: the date at midnight
/// (`2026-11-27`), else the day and the time of day (`11-27 12:00`), UTC.
fn day_label(days: &f64) -> String {
    let minutes = (days * 1_440.0).round();
    let stamp = utc(minutes * 60.0);
    if minutes % 1_440.0 == 0.0 {
        stamp.get(..10).unwrap_or("").to_string()
    } else {
        format!(
            "{} {}",
            stamp.get(5..10).unwrap_or(""),
            stamp.get(11..16).unwrap_or("")
        )
    }
}

/// An instant in seconds since the epoch as RFC 3339 UTC.
fn utc(seconds: f64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(seconds.max(0.0));
    latlab_model::stamp::rfc3339(at)
}

/// A linear axis' label: the value with at most three decimals.
fn axis_number(value: &f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A log axis' label at a power of ten: `1`, `10`, `100`, `1000`, then `10⁴`, and
/// `10⁻¹` downwards. Other values (minor grid lines) get none.
fn power_of_ten(value: &f64) -> String {
    let exponent = value.log10().round();
    if (value.log10() - exponent).abs() > 1e-6 {
        return String::new();
    }
    match exponent as i32 {
        e @ 0..=3 => 10u32.pow(e as u32).to_string(),
        e => format!("10{}", superscript(e)),
    }
}

fn superscript(n: i32) -> String {
    n.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            _ => '⁹',
        })
        .collect()
}

/// The legend's layout: entries in as many columns as the longest label allows.
struct Legend {
    columns: u32,
    rows: u32,
}

impl Legend {
    fn of(chart: &Chart) -> Legend {
        let entries = chart.series.len() as u32;
        let longest = chart
            .series
            .iter()
            .map(|s| s.label.chars().count().min(LEGEND_CHARS))
            .max()
            .unwrap_or(0) as u32;
        // A 13 px sans-serif character is about 7 px wide; 40 px for the line sample.
        let entry_width = 40 + longest * 7 + 16;
        let columns = ((WIDTH - 2 * LEGEND_PAD) / entry_width).clamp(1, 4);
        Legend {
            columns,
            rows: entries.div_ceil(columns),
        }
    }

    fn height(&self) -> u32 {
        if self.rows == 0 {
            0
        } else {
            self.rows * LEGEND_ROW + LEGEND_PAD
        }
    }

    fn draw(&self, area: &Area, chart: &Chart) -> DrawResult {
        let column_width = ((WIDTH - 2 * LEGEND_PAD) / self.columns) as i32;
        let left = Pos::new(HPos::Left, VPos::Center);
        for (i, series) in chart.series.iter().enumerate() {
            let (row, col) = (i as u32 / self.columns, i as u32 % self.columns);
            let x = LEGEND_PAD as i32 + col as i32 * column_width;
            let y = (row * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            area.draw(&Rectangle::new(
                [(x, y - 2), (x + 28, y + 2)],
                colour(series.colour).filled(),
            ))?;
            let label: String = if series.label.chars().count() > LEGEND_CHARS {
                let short: String = series.label.chars().take(LEGEND_CHARS - 1).collect();
                format!("{short}…")
            } else {
                series.label.clone()
            };
            area.draw(&Text::new(
                label,
                (x + 36, y),
                (FONT, 14).into_font().color(&BLACK).pos(left),
            ))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_labels_are_powers_of_ten() {
        assert_eq!(power_of_ten(&1.0), "1");
        assert_eq!(power_of_ten(&1000.0), "1000");
        assert_eq!(power_of_ten(&100_000.000_000_01), "10⁵");
        assert_eq!(power_of_ten(&0.001), "10⁻³");
        assert_eq!(power_of_ten(&20.0), "");
    }

    #[test]
    fn linear_labels_drop_trailing_zeros() {
        assert_eq!(axis_number(&200.0), "200");
        assert_eq!(axis_number(&0.25), "0.25");
    }

    #[test]
    fn dates_are_labelled_by_day_or_by_time_of_day() {
        let midnight = 20_784.0; // 2026-11-27
        assert_eq!(day_label(&midnight), "2026-11-27");
        assert_eq!(day_label(&(midnight + 0.5)), "11-27 12:00");
    }

    #[test]
    fn palette_colours_are_css() {
        assert_eq!(colour_hex(0), "#0072B2");
        assert_eq!(colour_hex(PALETTE.len()), "#0072B2");
    }
}
