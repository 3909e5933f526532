//! Tables for a terminal, fitted to its width.
//!
//! A table that fits is printed as it is, so at 200 columns (and into a pipe, where
//! nothing is narrowed) every table reads as it always did. One that does not fit
//! first gives up the columns its maker marked as the least needed, and says which;
//! if still too wide, it is cut into bands of whole columns printed one under the
//! other, each led by the table's first column (what the row is: a stream, a run), so
//! every figure stays beside its name and its unit. A column too wide for a band of
//! its own has its cells wrapped. Where the bands would hold only a column or two each,
//! every row is shown instead as its fields under each other (`p99 (µs)  26.527`).

use comfy_table::{presets, CellAlignment, ContentArrangement};
use latlab_model::width::{columns, Width};

/// How a table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Box-drawing lines around every cell (the report's tables).
    Boxed,
    /// No lines: columns apart by spaces (listings, `latlab runs`).
    Plain,
}

/// Where a column's cells sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// On the left: names, text.
    Left,
    /// On the right: numbers, so their digits line up.
    Right,
}

/// A table of text cells.
pub struct TextTable {
    frame: Frame,
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

struct Column {
    title: String,
    align: Align,
    /// Given up to fit a narrow width in the order of this rank (lowest first); never
    /// when `None`.
    given_up: Option<usize>,
}

/// A table laid out for a width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The table, without a line break after its last line.
    pub text: String,
    /// The titles of the columns given up to fit, in the table's order.
    pub left_out: Vec<String>,
}

impl TextTable {
    /// An empty table drawn as `frame`.
    pub fn new(frame: Frame) -> TextTable {
        TextTable {
            frame,
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Adds a column that is always shown. A title may hold a line break.
    pub fn column(&mut self, title: impl Into<String>, align: Align) -> &mut TextTable {
        self.columns.push(Column {
            title: title.into(),
            align,
            given_up: None,
        });
        self
    }

    /// Adds a column that may be left out to fit a narrow width: those of the lowest
    /// `rank` go first.
    pub fn column_given_up(
        &mut self,
        title: impl Into<String>,
        align: Align,
        rank: usize,
    ) -> &mut TextTable {
        self.column(title, align);
        if let Some(column) = self.columns.last_mut() {
            column.given_up = Some(rank);
        }
        self
    }

    /// Adds a row: one cell per column, in order.
    pub fn row(&mut self, cells: Vec<String>) -> &mut TextTable {
        self.rows.push(cells);
        self
    }

    /// The table laid out to fit `width` (see the module's description).
    pub fn fit(&self, width: Width) -> Fitted {
        let all: Vec<usize> = (0..self.columns.len()).collect();
        let whole = self.draw(&all, None);
        let Width::Columns(limit) = width else {
            return Fitted {
                text: whole,
                left_out: Vec::new(),
            };
        };
        let mut shown = all;
        let mut text = whole;
        let mut given_up: Vec<usize> = (0..self.columns.len())
            .filter(|&i| self.columns[i].given_up.is_some())
            .collect();
        given_up.sort_by_key(|&i| self.columns[i].given_up);
        let mut dropped = Vec::new();
        while !width.fits(&text) {
            let Some(next) = given_up.get(dropped.len()) else {
                text = self.banded(&shown, limit);
                break;
            };
            dropped.push(*next);
            shown.retain(|i| i != next);
            text = self.draw(&shown, None);
        }
        // A narrow column given up early may fit again beside what is left: the most
        // needed first.
        for &back in dropped.iter().rev() {
            let mut with = shown.clone();
            with.push(back);
            with.sort_unstable();
            let drawn = self.draw(&with, None);
            if width.fits(&drawn) {
                (shown, text) = (with, drawn);
            }
        }
        Fitted {
            text,
            left_out: (0..self.columns.len())
                .filter(|i| !shown.contains(i))
                .map(|i| self.columns[i].title.replace('\n', " "))
                .collect(),
        }
    }

    /// The columns `shown` cut into bands that fit `limit`, each led by the first; or,
    /// when that leaves a band per column or two, stacked row by row.
    fn banded(&self, shown: &[usize], limit: usize) -> String {
        let Some((&lead, rest)) = shown.split_first() else {
            return String::new();
        };
        let widths = self.content_widths();
        // What a column adds to a table's width: its content, a space either side, and
        // its border; a boxed table has one more border on the left.
        let (border, left) = match self.frame {
            Frame::Boxed => (1, 1),
            Frame::Plain => (0, 0),
        };
        let cost = |i: usize| widths[i] + 2 + border;
        let mut bands: Vec<Vec<usize>> = Vec::new();
        let mut band = vec![lead];
        let mut used = left + cost(lead);
        for &i in rest {
            if band.len() > 1 && used + cost(i) > limit {
                bands.push(std::mem::replace(&mut band, vec![lead]));
                used = left + cost(lead);
            }
            band.push(i);
            used += cost(i);
        }
        bands.push(band);
        // Bands of one or two columns each are a column per screen: one row's fields
        // under each other read better.
        if bands.len() > 1 && rest.len() < 2 * bands.len() {
            return self.stacked(shown, limit);
        }
        let drawn: Vec<String> = bands
            .iter()
            .map(|band| {
                let text = self.draw(band, None);
                match Width::Columns(limit).fits(&text) {
                    true => text,
                    // One column too wide for a band of its own: its cells wrap.
                    false => self.draw(band, Some(limit)),
                }
            })
            .collect();
        drawn.join("\n\n")
    }

    /// Each row as its fields under each other, `title  value`, led by the first
    /// column's; values wrap under themselves to fit `limit`. Rows apart by a blank line.
    fn stacked(&self, shown: &[usize], limit: usize) -> String {
        let title = |i: usize| self.columns[i].title.replace('\n', " ");
        let names = shown[1..]
            .iter()
            .map(|&i| columns(&title(i)))
            .max()
            .unwrap_or(0);
        let indent = " ".repeat(names + 4);
        let width = Width::Columns(limit);
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|row| {
                let cell = |i: usize| row.get(i).map_or("", String::as_str).replace('\n', " ");
                let lead = format!("{} ", title(shown[0]));
                let mut text = width.wrap(&cell(shown[0]), &lead, "  ");
                for &i in &shown[1..] {
                    let name = title(i);
                    let pad = " ".repeat(names - columns(&name) + 2);
                    text.push('\n');
                    text.push_str(&width.wrap(&cell(i), &format!("  {name}{pad}"), &indent));
                }
                text
            })
            .collect();
        rows.join("\n\n")
    }

    /// The widest line of each column's title and cells.
    fn content_widths(&self) -> Vec<usize> {
        let widest = |text: &str| text.lines().map(columns).max().unwrap_or(0);
        (0..self.columns.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| widest(c))
                    .chain([widest(&self.columns[i].title)])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The columns `shown`, drawn; with cells wrapped to fit `wrap` columns if given.
    fn draw(&self, shown: &[usize], wrap: Option<usize>) -> String {
        let mut table = comfy_table::Table::new();
        table.load_preset(match self.frame {
            Frame::Boxed => presets::UTF8_FULL_CONDENSED,
            Frame::Plain => presets::NOTHING,
        });
        if let Some(limit) = wrap {
            table
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_width(u16::try_from(limit).unwrap_or(u16::MAX));
        }
        table.set_header(shown.iter().map(|&i| self.columns[i].title.as_str()));
        for row in &self.rows {
            table.add_row(shown.iter().map(|&i| row.get(i).map_or("", String::as_str)));
        }
        for (n, &i) in shown.iter().enumerate() {
            if let (Align::Right, Some(column)) = (self.columns[i].align, table.column_mut(n)) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        table.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statistics() -> TextTable {
        let mut table = TextTable::new(Frame::Boxed);
        table.column("stream", Align::Left);
        for title in [
            "samples",
            "min\n(µs)",
            "p50\n(µs)",
            "p99\n(µs)",
            "max\n(µs)",
        ] {
            table.column(title, Align::Right);
        }
        table.row(
            ["cpu 0", "4998", "2.176", "4.259", "26.527", "2283.378"]
                .map(String::from)
                .to_vec(),
        );
        table.row(
            ["cpu 1", "4998", "2.177", "4.211", "25.807", "1944.916"]
                .map(String::from)
                .to_vec(),
        );
        table
    }

    #[test]
    fn a_table_that_fits_is_as_it_always_was() {
        let table = statistics();
        let wide = table.fit(Width::Unlimited);
        assert_eq!(table.fit(Width::Columns(200)), wide);
        assert!(wide.left_out.is_empty());
        assert_eq!(wide.text.lines().count(), 7);
    }

    #[test]
    fn a_table_too_wide_is_cut_into_bands_led_by_its_first_column() {
        let fitted = statistics().fit(Width::Columns(40));
        insta::assert_snapshot!(fitted.text, @r"
        ┌────────┬─────────┬───────┬───────┐
        │ stream ┆ samples ┆   min ┆   p50 │
        │        ┆         ┆  (µs) ┆  (µs) │
        ╞════════╪═════════╪═══════╪═══════╡
        │ cpu 0  ┆    4998 ┆ 2.176 ┆ 4.259 │
        │ cpu 1  ┆    4998 ┆ 2.177 ┆ 4.211 │
        └────────┴─────────┴───────┴───────┘

        ┌────────┬────────┬──────────┐
        │ stream ┆    p99 ┆      max │
        │        ┆   (µs) ┆     (µs) │
        ╞════════╪════════╪══════════╡
        │ cpu 0  ┆ 26.527 ┆ 2283.378 │
        │ cpu 1  ┆ 25.807 ┆ 1944.916 │
        └────────┴────────┴──────────┘
        ");
        assert!(fitted.left_out.is_empty());
    }

    #[test]
    fn columns_given_up_go_first_lowest_rank_first_and_are_named() {
        let mut table = TextTable::new(Frame::Plain);
        table
            .column("id", Align::Left)
            .column_given_up("host", Align::Left, 1)
            .column_given_up("added", Align::Left, 0)
            .column("max", Align::Left);
        table.row(vec![
            "20261121T005337Z-7ebf7f".into(),
            "a-rather-long-host-name".into(),
            "2026-11-21 00:53".into(),
            "2283.378 µs".into(),
        ]);
        let fitted = table.fit(Width::Columns(64));
        assert_eq!(fitted.left_out, ["added"]);
        assert!(Width::Columns(64).fits(&fitted.text));
        let fitted = table.fit(Width::Columns(40));
        assert_eq!(fitted.left_out, ["host", "added"]);
        assert!(Width::Columns(40).fits(&fitted.text));
    }

    #[test]
    fn a_narrow_column_given_up_early_comes_back_where_it_fits() {
        let mut table = TextTable::new(Frame::Plain);
        table
            .column("id", Align::Left)
            .column_given_up("cpus", Align::Left, 0)
            .column_given_up("kernel", Align::Left, 1)
            .column("max", Align::Left);
        table.row(vec![
            "20261121T005337Z-7ebf7f".into(),
            "0-1".into(),
            "6.18.44-rt-a-long-kernel-release".into(),
            "2283.378 µs".into(),
        ]);
        let fitted = table.fit(Width::Columns(50));
        assert_eq!(fitted.left_out, ["kernel"]);
        assert!(fitted.text.contains("0-1"));
    }

    #[test]
    fn a_column_too_wide_for_any_band_has_its_cells_wrapped() {
        let mut table = TextTable::new(Frame::Boxed);
        table
            .column("reference", Align::Left)
            .column("what", Align::Left);
        table.row(vec!["ref:rr-table3".into(), "word ".repeat(30)]);
        let fitted = table.fit(Width::Columns(50));
        assert!(Width::Columns(50).fits(&fitted.text), "{}", fitted.text);
        assert!(fitted.text.lines().count() > 5);
    }

    #[test]
    fn too_narrow_for_two_columns_a_band_each_rows_are_stacked() {
        let fitted = statistics().fit(Width::Columns(24));
        insta::assert_snapshot!(fitted.text, @r"
        stream cpu 0
          samples   4998
          min (µs)  2.176
          p50 (µs)  4.259
          p99 (µs)  26.527
          max (µs)  2283.378

        stream cpu 1
          samples   4998
          min (µs)  2.177
          p50 (µs)  4.211
          p99 (µs)  25.807
          max (µs)  1944.916
        ");
    }
}
