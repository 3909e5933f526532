//! `latlab methods`: the timer probe's sleep methods, the choices of its `method`
//! parameter in the registry.

use crate::error::{exit, CliError};
use crate::output::Human;
use latlab_measure::probe::timer;
use latlab_model::spec::TimerMethod;
use latlab_model::width::Width;

/// Prints each method with one line on what it does.
pub fn execute() -> Result<u8, CliError> {
    Human::Stdout.write(&listing(crate::terminal::width(Human::Stdout)))?;
    Ok(exit::OK)
}

/// The listing, made from the timer probe's `method` parameter, laid out for `width`.
fn listing(width: Width) -> String {
    let mut text = String::new();
    let methods = timer::INFO.params.iter().filter(|p| p.key == "method");
    for name in methods.flat_map(|p| p.choices) {
        let describe = TimerMethod::parse(name).map_or("", |m| m.describe());
        let first = format!("{name:<12} ");
        text.push_str(&width.wrap(describe, &first, &" ".repeat(13)));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_of_the_timer_is_listed_with_what_it_does() {
        insta::assert_snapshot!(listing(Width::Unlimited), @r"
        abs          clock_nanosleep to an absolute deadline (cyclictest default)
        rel          relative nanosleep of one period; deadlines drift (Wilshire test)
        timerfd      periodic timerfd, woken by read()
        posix-timer  periodic POSIX timer signalling the thread, sigwaitinfo()
        spin         busy-wait on the clock: the floor software can see
        hybrid       sleep to deadline minus a margin, then busy-wait
        ");
    }
}
