//! How wide text for a terminal may be, and text measured, wrapped and folded to a
//! width.
//!
//! latlab's tables and its live display are laid out for the terminal they are printed
//! on: a board's serial console is often 80 columns, a workstation's window 200. Where
//! the output is no terminal (a pipe, a file) nothing is narrowed: scripts that parse
//! latlab's lines get them whole, as cyclictest prints its lines whole into a pipe.

use unicode_width::UnicodeWidthChar;

/// How wide text may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// At most this many columns: tables narrow or wrap, lines wrap.
    Columns(usize),
    /// No limit: every line as long as it is (a pipe, a file, `--format wide`).
    Unlimited,
}

impl Width {
    /// The narrowest width text is laid out for: below it no table keeps a figure
    /// beside its name, so a narrower terminal gets this width and wraps.
    pub const NARROWEST: usize = 40;
    /// The width of a terminal that does not say its size: a serial console answers
    /// 0 × 0, and a VT100 (what it most often is) has 80 columns.
    pub const UNSAID: usize = 80;

    /// The width of output to a terminal, or elsewhere: the terminal's own (`window`,
    /// what `TIOCGWINSZ` answers), else `COLUMNS` (`columns_var`; also for a pipe, so
    /// `COLUMNS=80 latlab runs | less` narrows), else [`Width::UNSAID`] on a terminal and
    /// no limit elsewhere. Zero counts as unsaid.
    pub fn choose(window: Option<u16>, columns_var: Option<&str>, is_terminal: bool) -> Width {
        let said = window
            .map(usize::from)
            .filter(|&w| w > 0)
            .or_else(|| columns_var.and_then(|c| c.trim().parse::<usize>().ok()))
            .filter(|&w| w > 0);
        match (said, is_terminal) {
            (Some(w), _) => Width::at(w),
            (None, true) => Width::at(Width::UNSAID),
            (None, false) => Width::Unlimited,
        }
    }

    /// At most `columns`, never fewer than [`Width::NARROWEST`].
    pub fn at(columns: usize) -> Width {
        Width::Columns(columns.max(Width::NARROWEST))
    }

    /// The limit, or `unlimited` when there is none.
    pub fn or(self, unlimited: usize) -> usize {
        match self {
            Width::Columns(w) => w,
            Width::Unlimited => unlimited,
        }
    }

    /// Whether every line of `text` fits.
    pub fn fits(self, text: &str) -> bool {
        match self {
            Width::Columns(w) => text.lines().all(|l| columns(l) <= w),
            Width::Unlimited => true,
        }
    }

    /// `text` (one paragraph) laid out for this width: wrapped at spaces (see [`wrap`])
    /// and [folded](Width::fold), the first line starting with `first`, the others with
    /// `rest`; on one line when there is no limit.
    pub fn wrap(self, text: &str, first: &str, rest: &str) -> String {
        match self {
            Width::Columns(w) => self.fold(&wrap(text, w, first, rest)),
            Width::Unlimited => format!("{first}{text}"),
        }
    }

    /// `text` with every line that does not fit broken into lines that do, as the
    /// terminal would break it, but so the lines are known: the last step of a text
    /// laid out for a width, for the rare word longer than a line.
    pub fn fold(self, text: &str) -> String {
        let Width::Columns(width) = self else {
            return text.to_string();
        };
        if self.fits(text) {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + text.len() / width);
        let mut column = 0;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                out.push(c);
                copy_escape(&mut chars, &mut out);
                continue;
            }
            if c == '\n' {
                column = 0;
                out.push(c);
                continue;
            }
            let w = c.width().unwrap_or(0);
            if column + w > width {
                out.push('\n');
                column = 0;
            }
            out.push(c);
            column += w;
        }
        out
    }
}

/// The columns `text` (one line) takes on a terminal: wide characters take two,
/// escape sequences (`ESC [ … letter`, colour and cursor movement) none.
pub fn columns(text: &str) -> usize {
    let mut total = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            copy_escape(&mut chars, &mut String::new());
        } else {
            total += c.width().unwrap_or(0);
        }
    }
    total
}

/// The rows `text` takes on a terminal `width` columns wide: a line wider than the
/// terminal wraps onto the next row (an empty line still takes one). What a redraw
/// moves the cursor up by.
pub fn rows(text: &str, width: usize) -> usize {
    let width = width.max(1);
    text.lines()
        .map(|l| columns(l).div_ceil(width).max(1))
        .sum()
}

/// `text` wrapped at spaces into lines of at most `width` columns: the first line
/// starts with `first`, the others with `rest`. A word longer than a line stays whole
/// (see [`Width::fold`]).
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = first.to_string();
    let mut column = columns(first);
    let mut line_start = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = columns(word);
        if !line_start && column + 1 + len > width {
            out.push('\n');
            out.push_str(rest);
            column = columns(rest);
            line_start = true;
        }
        if !line_start {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
        line_start = false;
    }
    out
}

/// Copies the rest of an escape sequence (after its `ESC`) from `chars` to `out`: a CSI
/// sequence up to its final letter, or the one character after `ESC`.
fn copy_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    match chars.next() {
        Some('[') => {
            out.push('[');
            for c in chars.by_ref() {
                out.push(c);
                if ('\x40'..='\x7e').contains(&c) {
                    break;
                }
            }
        }
        Some(c) => out.push(c),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_says_first_then_columns_then_the_default() {
        assert_eq!(
            Width::choose(Some(132), Some("100"), true),
            Width::Columns(132)
        );
        assert_eq!(Width::choose(None, Some("100"), true), Width::Columns(100));
        assert_eq!(Width::choose(None, None, true), Width::Columns(80));
        // A serial console answers 0 × 0.
        assert_eq!(Width::choose(Some(0), None, true), Width::Columns(80));
        assert_eq!(
            Width::choose(Some(0), Some(" 90 "), true),
            Width::Columns(90)
        );
    }

    #[test]
    fn a_pipe_is_not_narrowed_unless_columns_says_so() {
        assert_eq!(Width::choose(None, None, false), Width::Unlimited);
        assert_eq!(Width::choose(None, Some(""), false), Width::Unlimited);
        assert_eq!(Width::choose(None, Some("wide"), false), Width::Unlimited);
        assert_eq!(Width::choose(None, Some("0"), false), Width::Unlimited);
        assert_eq!(Width::choose(None, Some("80"), false), Width::Columns(80));
    }

    #[test]
    fn a_tiny_terminal_gets_the_narrowest_width() {
        assert_eq!(Width::choose(Some(20), None, true), Width::Columns(40));
    }

    #[test]
    fn escapes_take_no_columns_and_wide_characters_two() {
        assert_eq!(columns("\x1b[1;31mFAIL\x1b[0m"), 4);
        assert_eq!(columns("p99≈ µs"), 7);
        assert_eq!(columns("主机"), 4);
    }

    #[test]
    fn a_line_wider_than_the_terminal_takes_more_rows() {
        assert_eq!(rows("a\n\nb\n", 80), 3);
        assert_eq!(rows(&"x".repeat(80), 80), 1);
        assert_eq!(rows(&"x".repeat(81), 80), 2);
        assert_eq!(rows(&format!("{}\ny", "x".repeat(113)), 80), 3);
    }

    #[test]
    fn wraps_at_the_width_with_indents() {
        let text = "word ".repeat(40);
        let wrapped = wrap(&text, 50, "- ", "  ");
        assert!(wrapped.lines().count() > 1);
        assert!(wrapped.lines().all(|l| l.chars().count() <= 50));
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("  word")));
    }

    #[test]
    fn folding_breaks_only_what_does_not_fit_and_keeps_escapes_whole() {
        let width = Width::Columns(40);
        assert_eq!(width.fold("short\nlines"), "short\nlines");
        let long = format!("\x1b[1m{}\x1b[0m", "y".repeat(50));
        let folded = width.fold(&long);
        assert_eq!(folded.lines().count(), 2);
        assert!(width.fits(&folded));
        assert!(folded.starts_with("\x1b[1my") && folded.ends_with("y\x1b[0m"));
        assert_eq!(Width::Unlimited.fold(&long), long);
    }

    #[test]
    fn a_paragraph_is_wrapped_only_when_the_width_is_limited() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        assert_eq!(Width::Unlimited.wrap(text, "- ", "  "), format!("- {text}"));
        let wrapped = Width::Columns(40).wrap(text, "- ", "  ");
        assert_eq!(
            wrapped,
            "- one two three four five six seven\n  eight nine ten eleven twelve"
        );
    }
}
