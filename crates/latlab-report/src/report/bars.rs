//! Stacked horizontal bars drawn as SVG by hand: one bar per spike, cut into the parts
//! its latency went to, in time order. `plotters` draws lines on axes; a handful of
//! rectangles with a title each (the tooltip a reader hovers for) is plainer written
//! directly, and keeps every rectangle's name for assistive technology.

use super::plot::colour_hex;
use latlab_model::text::xml_escaped;
use std::fmt::Write as _;

/// Width of the drawing, in pixels (as the other plots).
const WIDTH: f64 = 960.0;
/// Where the bars start: the row labels are to their left.
const LEFT: f64 = 230.0;
/// Space right of the longest bar.
const RIGHT: f64 = 30.0;
/// Height of one bar's row.
const ROW: f64 = 28.0;
/// Height of a bar.
const BAR: f64 = 18.0;
/// Space above the bars.
const TOP: f64 = 12.0;
/// Height of the axis with its labels and title.
const AXIS: f64 = 48.0;
/// Height of one legend row.
const LEGEND_ROW: f64 = 22.0;
/// Legend entries per row.
const LEGEND_COLUMNS: usize = 4;
/// The colour of the parts no event explains.
pub(crate) const GREY: &str = "#B0B0B0";
/// The font of every text (as the other plots).
const FONT: &str = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, Arial, sans-serif";

/// Bars, ready to draw.
pub(crate) struct Bars {
    /// The title, the drawing's accessible name.
    pub caption: String,
    /// How to read it, the figure's caption.
    pub explanation: String,
    /// The x axis' description, with its unit.
    pub x_label: String,
    /// One bar per row, top to bottom.
    pub rows: Vec<BarRow>,
    /// What each colour stands for.
    pub legend: Vec<(String, Colour)>,
}

/// One bar.
pub(crate) struct BarRow {
    /// Its label, left of it.
    pub label: String,
    /// Its pieces, left to right.
    pub segments: Vec<Segment>,
}

/// A piece of a bar.
pub(crate) struct Segment {
    /// What it is, shown when hovered.
    pub title: String,
    /// Its length, in the x axis' unit.
    pub value: f64,
    /// Its colour.
    pub colour: Colour,
}

/// A colour of the palette, or grey for what is not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Colour {
    /// The palette's colour at this index.
    Palette(usize),
    /// Grey.
    Grey,
}

impl Colour {
    fn css(self) -> String {
        match self {
            Colour::Palette(index) => colour_hex(index),
            Colour::Grey => GREY.to_string(),
        }
    }
}

/// A step for about five ticks up to `max`: 1, 2 or 5 times a power of ten.
fn tick_step(max: f64) -> f64 {
    let rough = (max / 5.0).max(1e-9);
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= rough)
        .unwrap_or(10.0 * power)
}

/// The bars as an `<svg>` element: an image (`role="img"`) named by its title and
/// described by the element `described_by` (the figure's caption); `id` is unique in
/// the page.
pub(crate) fn svg(bars: &Bars, id: &str, described_by: &str) -> String {
    let legend_rows = bars.legend.len().div_ceil(LEGEND_COLUMNS);
    let bars_height = bars.rows.len() as f64 * ROW;
    let height = TOP + bars_height + AXIS + legend_rows as f64 * LEGEND_ROW + 10.0;
    let longest = bars
        .rows
        .iter()
        .map(|r| r.segments.iter().map(|s| s.value.max(0.0)).sum::<f64>())
        .fold(0.0, f64::max);
    let step = tick_step(longest);
    let top = ((longest / step).ceil() * step).max(step);
    let x = |value: f64| LEFT + value / top * (WIDTH - LEFT - RIGHT);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-labelledby=\"{id}-title\" \
         aria-describedby=\"{described_by}\" font-family=\"{FONT}\" font-size=\"13\">\n\
         <title id=\"{id}-title\">{}</title>\n\
         <rect width=\"{WIDTH}\" height=\"{height}\" fill=\"#FFFFFF\"/>",
        xml_escaped(&bars.caption)
    );
    // Grid lines and tick labels under the bars.
    let axis_y = TOP + bars_height;
    let mut tick = 0.0;
    while tick <= top + step / 2.0 {
        let at = x(tick);
        let _ = writeln!(
            out,
            "<line x1=\"{at:.1}\" y1=\"{TOP}\" x2=\"{at:.1}\" y2=\"{axis_y}\" stroke=\"#E1E4E8\"/>\
             <text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            axis_y + 16.0,
            tick_label(tick, step)
        );
        tick += step;
    }
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{axis_y}\" x2=\"{:.1}\" y2=\"{axis_y}\" stroke=\"#000000\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        WIDTH - RIGHT,
        (LEFT + WIDTH - RIGHT) / 2.0,
        axis_y + 36.0,
        xml_escaped(&bars.x_label)
    );
    for (i, row) in bars.rows.iter().enumerate() {
        let y = TOP + i as f64 * ROW + (ROW - BAR) / 2.0;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 8.0,
            y + BAR / 2.0 + 4.5,
            xml_escaped(&row.label)
        );
        let mut at = 0.0;
        for segment in &row.segments {
            let value = segment.value.max(0.0);
            let _ = writeln!(
                out,
                "<rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{BAR}\" fill=\"{}\" \
                 stroke=\"#FFFFFF\" stroke-width=\"0.5\"><title>{}</title></rect>",
                x(at),
                x(at + value) - x(at),
                segment.colour.css(),
                xml_escaped(&segment.title)
            );
            at += value;
        }
    }
    let legend_y = axis_y + AXIS;
    let column = (WIDTH - 2.0 * 16.0) / LEGEND_COLUMNS as f64;
    for (i, (label, colour)) in bars.legend.iter().enumerate() {
        let lx = 16.0 + (i % LEGEND_COLUMNS) as f64 * column;
        let ly = legend_y + (i / LEGEND_COLUMNS) as f64 * LEGEND_ROW;
        let _ = writeln!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{ly:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            colour.css(),
            lx + 18.0,
            ly + 11.0,
            xml_escaped(label)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// A tick's label: as many decimals as the step needs.
fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{value:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars() -> Bars {
        Bars {
            caption: "The largest spikes <cut>".into(),
            explanation: "how to read it".into(),
            x_label: "latency (µs)".into(),
            rows: vec![BarRow {
                label: "#1".into(),
                segments: vec![
                    Segment {
                        title: "thread a&b".into(),
                        value: 300.0,
                        colour: Colour::Palette(0),
                    },
                    Segment {
                        title: "unexplained".into(),
                        value: 12.5,
                        colour: Colour::Grey,
                    },
                ],
            }],
            legend: vec![("thread".into(), Colour::Palette(0))],
        }
    }

    #[test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(1000.0), 200.0);
        assert_eq!(tick_step(312.5), 100.0);
        assert_eq!(tick_step(4.0), 1.0);
        assert_eq!(tick_label(0.5, 0.1), "0.5");
    }

    #[test]
    fn the_drawing_is_an_accessible_well_formed_image() {
        let svg = svg(&bars(), "bars-1", "bars-1-caption");
        let document = roxmltree::Document::parse(&svg).expect("well-formed");
        let root = document.root_element();
        assert_eq!(root.attribute("role"), Some("img"));
        assert_eq!(root.attribute("aria-describedby"), Some("bars-1-caption"));
        let titles: Vec<&str> = document
            .descendants()
            .filter(|n| n.has_tag_name("title"))
            .filter_map(|n| n.text())
            .collect();
        assert_eq!(
            titles,
            ["The largest spikes <cut>", "thread a&b", "unexplained"]
        );
        let widths: Vec<f64> = document
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.children().any(|c| c.has_tag_name("title")))
            .map(|n| n.attribute("width").unwrap().parse().unwrap())
            .collect();
        assert!(widths[0] > 20.0 * widths[1], "{widths:?}");
    }
}
