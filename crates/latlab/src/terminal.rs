//! What latlab's human output may use of a terminal: colour (`--color`, `NO_COLOR`),
//! cursor movement (the live display's redraw) and its width (`--format`).
//!
//! The colour and layout choices are made once, from the command line, before any
//! command runs; they hold for every stream the process writes, as a terminal setting
//! would.

use crate::cli::{ColorWhen, Layout};
use crate::output::Human;
use latlab_model::width::Width;
use latlab_report::report::Ansi;
use std::ffi::OsString;
use std::sync::OnceLock;

static COLOR_WHEN: OnceLock<ColorWhen> = OnceLock::new();
static LAYOUT: OnceLock<Layout> = OnceLock::new();

/// Records `--format fit|wide` for the rest of the process (the first choice stays).
pub fn choose_layout(layout: Layout) {
    let _ = LAYOUT.set(layout);
}

/// How wide text written to `human` may be: no limit with `--format wide`, else what
/// [`screen`] says.
pub fn width(human: Human) -> Width {
    match LAYOUT.get() {
        Some(Layout::Wide) => Width::Unlimited,
        _ => screen(human),
    }
}

/// The width of `human` whatever `--format` says, by [`Width::choose`]'s rule: the
/// terminal's own (`TIOCGWINSZ` on the stream), else `COLUMNS`, else 80 columns on a
/// terminal and no limit on a pipe or file. What a redraw counts rows by.
pub fn screen(human: Human) -> Width {
    let window = match human {
        Human::Stdout => terminal_size::terminal_size_of(std::io::stdout()),
        Human::Stderr => terminal_size::terminal_size_of(std::io::stderr()),
    };
    let columns = std::env::var("COLUMNS").ok();
    Width::choose(
        window.map(|(w, _)| w.0),
        columns.as_deref(),
        human.is_terminal(),
    )
}

/// Records `--color` for the rest of the process (the first choice stays).
pub fn choose_colour(when: ColorWhen) {
    let _ = COLOR_WHEN.set(when);
}

/// Whether text written to `human` is coloured.
pub fn colour(human: Human) -> bool {
    colours(
        COLOR_WHEN.get().copied().unwrap_or(ColorWhen::Auto),
        human.is_terminal(),
        std::env::var_os("NO_COLOR"),
        std::env::var_os("TERM"),
    )
}

/// The report renderers' form of [`colour`].
pub fn ansi(human: Human) -> Ansi {
    if colour(human) {
        Ansi::On
    } else {
        Ansi::Off
    }
}

/// Whether `human` is a terminal that can move its cursor, so a table can be redrawn in
/// place. Colour has no say: `NO_COLOR` asks for no colour, not for no redraw.
pub fn redraws(human: Human) -> bool {
    human.is_terminal() && !is_dumb(std::env::var_os("TERM"))
}

/// The rule: `always` and `never` are obeyed (a flag given for one run overrides the
/// environment, as no-color.org asks); `auto` colours a terminal unless `NO_COLOR` holds
/// any non-empty value or the terminal is `dumb`.
fn colours(
    when: ColorWhen,
    is_terminal: bool,
    no_color: Option<OsString>,
    term: Option<OsString>,
) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => is_terminal && no_color.is_none_or(|v| v.is_empty()) && !is_dumb(term),
    }
}

/// `TERM=dumb`: a terminal that understands no escape sequence.
fn is_dumb(term: Option<OsString>) -> bool {
    term.is_some_and(|t| t == "dumb")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(is_terminal: bool, no_color: Option<&str>, term: Option<&str>) -> bool {
        colours(
            ColorWhen::Auto,
            is_terminal,
            no_color.map(OsString::from),
            term.map(OsString::from),
        )
    }

    #[test]
    fn auto_colours_a_terminal_only() {
        assert!(auto(true, None, Some("xterm-256color")));
        assert!(auto(true, None, None));
        assert!(!auto(false, None, Some("xterm-256color")));
    }

    #[test]
    fn no_color_with_any_non_empty_value_turns_auto_off() {
        assert!(!auto(true, Some("1"), Some("xterm")));
        assert!(!auto(true, Some("0"), Some("xterm")));
        assert!(!auto(true, Some("false"), Some("xterm")));
        // An empty value is as if unset (no-color.org).
        assert!(auto(true, Some(""), Some("xterm")));
    }

    #[test]
    fn a_dumb_terminal_gets_no_colour_on_auto() {
        assert!(!auto(true, None, Some("dumb")));
    }

    #[test]
    fn the_flag_overrides_the_environment() {
        let no_color = || Some(OsString::from("1"));
        assert!(colours(ColorWhen::Always, false, no_color(), None));
        assert!(!colours(ColorWhen::Never, true, None, None));
    }
}
