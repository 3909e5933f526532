//! The farm view: every rig with its latest run, and every series (runs that measured
//! the same thing on one rig, [`SeriesKey`]) with its worst maximum and p99.9 over the
//! last day, the last week and all its runs, and its latest run judged against the one
//! before it by the comparison's verdict — OSADL's farm overview, for `latlab serve`'s
//! `/farm`.
//!
//! Built from what a store keeps beside its index (each run's summary and its
//! [`SeriesFigures`]), so that a farm of many thousand runs is read without its Runs;
//! only the verdicts need the histograms of two runs per series, which
//! [`Farm::gather`] loads. The windows count back from a given instant (the request's
//! time), by each run's start; a run whose start is unknown is only in "all".
//!
//! A worst figure is a bound when it may be higher than shown: when a run's figure is a
//! bound, or unknown beside known ones. A window without a known figure says unknown,
//! never 0.

mod page;

pub use page::{farm_page, series_label};

use crate::compare::{compare, Change, Judged, RunFigures, Tolerance};
use latlab_model::progress::{Progress, RunState};
use latlab_model::rate::SpikeRate;
use latlab_model::run::{Percentile, Run};
use latlab_model::series::{SeriesFigures, SeriesKey};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// One run as the farm view reads it: its summary in the store's index and its
/// figures per series.
#[derive(Debug, Clone)]
pub struct FarmRun {
    /// Its id.
    pub id: String,
    /// Its host name, when known.
    pub host: Option<String>,
    /// Its kernel release, when known.
    pub kernel: Option<String>,
    /// When it started; `None`: not known (an import of a file without it).
    pub started_at: Option<SystemTime>,
    /// When it entered the store.
    pub added_at: Option<SystemTime>,
    /// Its outcome as the index keeps it: `pass`, `fail`, `no-thresholds`, ….
    pub verdict: String,
    /// Running or died; `None` for a run that ended.
    pub progress: Option<Progress>,
    /// Its figures, one per series (per probe it ran).
    pub series: Vec<SeriesFigures>,
}

impl FarmRun {
    /// Whether it failed: a threshold failed, measuring failed, it measured less than
    /// asked or under degraded conditions, or it died.
    pub fn failed(&self) -> bool {
        let died = self
            .progress
            .as_ref()
            .is_some_and(|p| p.state == RunState::Died);
        died || matches!(
            self.verdict.as_str(),
            "fail" | "measuring-failed" | "incomplete" | "untrusted"
        )
    }

    /// Whether it is still being measured.
    pub fn running(&self) -> bool {
        self.progress
            .as_ref()
            .is_some_and(|p| p.state == RunState::Running)
    }

    /// The instant runs are ordered by: the start, else the time it was added.
    fn when(&self) -> Option<SystemTime> {
        self.started_at.or(self.added_at)
    }
}

/// A span of time counted back from the view's instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The 24 hours before.
    Day,
    /// The 7 days before.
    Week,
    /// Every run, whenever it started (or if that is not known).
    All,
}

impl Window {
    /// Every window, shortest first.
    pub const EACH: [Window; 3] = [Window::Day, Window::Week, Window::All];

    /// Its name in a table: `last 24 h`, `last 7 d`, `all runs`.
    pub fn label(self) -> &'static str {
        match self {
            Window::Day => "last 24 h",
            Window::Week => "last 7 d",
            Window::All => "all runs",
        }
    }

    /// Whether a run started at `started` is in it, seen at `now`. A start after `now`
    /// (a rig's clock ahead) is in every window; an unknown start only in `All`.
    pub fn holds(self, started: Option<SystemTime>, now: SystemTime) -> bool {
        let span = match self {
            Window::Day => Duration::from_secs(86_400),
            Window::Week => Duration::from_secs(7 * 86_400),
            Window::All => return true,
        };
        started.is_some_and(|t| now.duration_since(t).unwrap_or_default() < span)
    }
}

/// A series' runs in one window, taken together.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowFigures {
    /// Its runs.
    pub runs: usize,
    /// Their samples together.
    pub samples: u64,
    /// The largest sample among them ([`worst`]); `None`: no run with samples has one.
    pub max: Option<Percentile>,
    /// The worst p99.9 among them ([`worst`]).
    pub p99_9: Option<Percentile>,
    /// Their samples above the spike level per hour, counts and times added; `None`
    /// when a run's is not known or they counted above different levels.
    pub spike_rate: Option<SpikeRate>,
}

/// The worst of runs' figures: `None` when none is known; a bound when one of them is
/// a bound, or unknown (it may be the worst).
pub fn worst(figures: impl IntoIterator<Item = Option<Percentile>>) -> Option<Percentile> {
    let figures: Vec<Option<Percentile>> = figures.into_iter().collect();
    let worst = Percentile::worst_of(figures.iter().flatten().copied())?;
    Some(match figures.iter().any(Option::is_none) {
        true => Percentile::AtLeast {
            at_least_ns: worst.value(),
        },
        false => worst,
    })
}

impl WindowFigures {
    /// The figures of `runs` (each one run's of this series).
    fn of(runs: &[&SeriesFigures]) -> WindowFigures {
        // A run without samples (died before measuring) has no figure to miss.
        let sampled: Vec<&&SeriesFigures> = runs.iter().filter(|f| f.samples > 0).collect();
        let rates: Option<Vec<SpikeRate>> = sampled.iter().map(|f| f.spike_rate).collect();
        WindowFigures {
            runs: runs.len(),
            samples: runs.iter().map(|f| f.samples).sum(),
            max: worst(sampled.iter().map(|f| f.max_ns.map(Percentile::Exact))),
            p99_9: worst(sampled.iter().map(|f| f.p99_9)),
            spike_rate: rates.and_then(|r| SpikeRate::combined(&r)),
        }
    }
}

/// How a series' latest run compares with the run before it.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// The series has one run: nothing to compare with.
    FirstRun,
    /// Not judged yet (or one of the two runs could not be loaded).
    NotJudged,
    /// The comparison's verdict on p99.9.
    Judged {
        /// What it concluded.
        change: Change,
        /// Latest / previous − 1, when both are values.
        relative_change: Option<f64>,
    },
    /// No verdict could be reached: why.
    Unknown(String),
}

/// The comparison's verdict in the farm's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// Significantly worse, beyond the tolerance: a regression.
    Worse,
    /// Significantly better, beyond the tolerance.
    Better,
    /// No significant change, or within the tolerance.
    Same,
    /// Cannot be told (a bound, a figure unknown).
    Undecided,
}

impl Flag {
    /// Its word: `worse`, `better`, `same`, `undecided`.
    pub fn word(self) -> &'static str {
        match self {
            Flag::Worse => "worse",
            Flag::Better => "better",
            Flag::Same => "same",
            Flag::Undecided => "undecided",
        }
    }
}

impl Judgement {
    /// Its flag; `None` when there was nothing to judge.
    pub fn flag(&self) -> Option<Flag> {
        match self {
            Judgement::FirstRun | Judgement::NotJudged => None,
            Judgement::Unknown(_) => Some(Flag::Undecided),
            Judgement::Judged { change, .. } => Some(match change {
                Change::Regression => Flag::Worse,
                Change::Improvement => Flag::Better,
                Change::WithinTolerance | Change::NoSignificantChange => Flag::Same,
                Change::Undecided => Flag::Undecided,
            }),
        }
    }
}

/// The figure the latest run of a series is judged on, and the tolerance: those of
/// `latlab compare` by default.
pub const JUDGED: Judged = Judged::DEFAULT;

/// `latest` against `previous` on their streams of `probe`, as `latlab compare` judges.
pub fn judge(previous: &Run, latest: &Run, probe: &str) -> Judgement {
    let figures = |run: &Run| RunFigures::of_probe(run, probe);
    let (base, new) = match (figures(previous), figures(latest)) {
        (Ok(base), Ok(new)) => (base, new),
        (Err(e), _) | (_, Err(e)) => return Judgement::Unknown(e.to_string()),
    };
    match compare(&base, &new, JUDGED.for_base(previous), Tolerance::DEFAULT) {
        Ok(c) => Judgement::Judged {
            change: c.change,
            relative_change: c.relative_change,
        },
        Err(e) => Judgement::Unknown(e.to_string()),
    }
}

/// One series of a rig.
#[derive(Debug, Clone, PartialEq)]
pub struct FarmSeries {
    /// What its runs measured.
    pub key: SeriesKey,
    /// Per window: [`Window::EACH`]'s order.
    pub windows: Vec<(Window, WindowFigures)>,
    /// Its latest run's id.
    pub latest: String,
    /// The run before it, when there is one.
    pub previous: Option<String>,
    /// The latest run against the previous one.
    pub judgement: Judgement,
}

/// One rig: its latest run and its series.
#[derive(Debug, Clone)]
pub struct FarmRig {
    /// Its identity as its series name it (`rig:bench-07`, `host:rig1`).
    pub rig: String,
    /// Its latest run (with every series it ran).
    pub latest: FarmRun,
    /// Its runs per window: [`Window::EACH`]'s order.
    pub runs: [usize; 3],
    /// Its series, by their keys.
    pub series: Vec<FarmSeries>,
}

/// The farm at an instant.
#[derive(Debug, Clone)]
pub struct Farm {
    /// The instant the windows count back from.
    pub now: SystemTime,
    /// The runs it holds.
    pub runs: usize,
    /// Its rigs, by identity.
    pub rigs: Vec<FarmRig>,
}

impl Farm {
    /// The farm of `runs` seen at `now`, its series not judged yet ([`Farm::gather`]
    /// judges them).
    pub fn of(runs: Vec<FarmRun>, now: SystemTime) -> Farm {
        let total = runs.len();
        // Each series' runs, and each rig's, earliest first.
        let mut order: Vec<&FarmRun> = runs.iter().collect();
        order.sort_by(|a, b| (a.when(), &a.id).cmp(&(b.when(), &b.id)));
        let mut series: BTreeMap<&SeriesKey, Vec<(&FarmRun, &SeriesFigures)>> = BTreeMap::new();
        let mut rigs: BTreeMap<&str, Vec<&FarmRun>> = BTreeMap::new();
        for run in order {
            for figures in &run.series {
                series.entry(&figures.key).or_default().push((run, figures));
                let of_rig = rigs.entry(figures.key.rig.as_str()).or_default();
                if of_rig.last().is_none_or(|last| last.id != run.id) {
                    of_rig.push(run);
                }
            }
        }
        let rigs = rigs
            .into_iter()
            .filter_map(|(rig, of_rig)| {
                let runs = Window::EACH
                    .map(|w| of_rig.iter().filter(|r| w.holds(r.started_at, now)).count());
                let series = series
                    .iter()
                    .filter(|(key, _)| key.rig == rig)
                    .map(|(key, runs)| FarmSeries::of(key, runs, now))
                    .collect();
                Some(FarmRig {
                    rig: rig.to_string(),
                    latest: (*of_rig.last()?).clone(),
                    runs,
                    series,
                })
            })
            .collect();
        Farm {
            now,
            runs: total,
            rigs,
        }
    }

    /// The farm of `runs` at `now` with every series' latest run judged against the
    /// one before it, each run loaded once by `load` (`None`: no longer stored).
    pub fn gather<E>(
        runs: Vec<FarmRun>,
        now: SystemTime,
        mut load: impl FnMut(&str) -> Result<Option<Run>, E>,
    ) -> Result<Farm, E> {
        let mut farm = Farm::of(runs, now);
        let mut loaded: BTreeMap<String, Option<Run>> = BTreeMap::new();
        for series in farm.rigs.iter_mut().flat_map(|r| &mut r.series) {
            let Some(previous) = &series.previous else {
                continue;
            };
            for id in [previous, &series.latest] {
                if !loaded.contains_key(id) {
                    loaded.insert(id.clone(), load(id)?);
                }
            }
            if let (Some(Some(previous)), Some(Some(latest))) =
                (loaded.get(previous), loaded.get(&series.latest))
            {
                series.judgement = judge(previous, latest, &series.key.probe);
            }
        }
        Ok(farm)
    }

    /// The rigs whose latest run failed ([`FarmRun::failed`]).
    pub fn failing(&self) -> usize {
        self.rigs.iter().filter(|r| r.latest.failed()).count()
    }

    /// The series whose latest run is worse than the one before it.
    pub fn regressions(&self) -> impl Iterator<Item = (&FarmRig, &FarmSeries)> {
        self.rigs.iter().flat_map(|rig| {
            rig.series
                .iter()
                .filter(|s| s.judgement.flag() == Some(Flag::Worse))
                .map(move |s| (rig, s))
        })
    }

    /// The runs started in `window`.
    pub fn runs_in(&self, window: Window) -> usize {
        let i = Window::EACH.iter().position(|w| *w == window).unwrap_or(2);
        match window {
            Window::All => self.runs,
            _ => self.rigs.iter().map(|r| r.runs[i]).sum(),
        }
    }
}

impl FarmSeries {
    /// The series `key` of `runs` (earliest first), seen at `now`.
    fn of(key: &SeriesKey, runs: &[(&FarmRun, &SeriesFigures)], now: SystemTime) -> FarmSeries {
        let windows = Window::EACH
            .iter()
            .map(|&w| {
                let held: Vec<&SeriesFigures> = runs
                    .iter()
                    .filter(|(run, _)| w.holds(run.started_at, now))
                    .map(|(_, figures)| *figures)
                    .collect();
                (w, WindowFigures::of(&held))
            })
            .collect();
        let ids: Vec<&str> = runs.iter().map(|(run, _)| run.id.as_str()).collect();
        let (latest, previous) = match ids.as_slice() {
            [.., previous, latest] => (latest.to_string(), Some(previous.to_string())),
            [latest] => (latest.to_string(), None),
            [] => (String::new(), None),
        };
        FarmSeries {
            key: key.clone(),
            windows,
            judgement: match previous {
                Some(_) => Judgement::NotJudged,
                None => Judgement::FirstRun,
            },
            latest,
            previous,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::Nanos;

    const HOUR: u64 = 3_600;

    fn now() -> SystemTime {
        latlab_model::stamp::parse_rfc3339("2026-11-28T12:00:00Z").unwrap()
    }

    fn exact(us: i64) -> Percentile {
        Percentile::Exact(Nanos(us * 1_000))
    }

    fn bound(us: i64) -> Percentile {
        Percentile::AtLeast {
            at_least_ns: Nanos(us * 1_000),
        }
    }

    /// A series' figures on `rig` of `probe`: 1000 samples, the maximum and p99.9
    /// given, 2 spikes above 100 µs in an hour.
    fn figures(
        rig: &str,
        probe: &str,
        max_us: Option<i64>,
        p999: Option<Percentile>,
    ) -> SeriesFigures {
        SeriesFigures {
            key: SeriesKey {
                rig: rig.to_string(),
                origin: "latlab".to_string(),
                probe: probe.to_string(),
                method: "abs".to_string(),
                period: "1000000".to_string(),
                policy: "fifo:95".to_string(),
                cpus: vec![0],
                load: "none".to_string(),
            },
            samples: 1_000,
            max_ns: max_us.map(|us| Nanos(us * 1_000)),
            p99_9: p999,
            spike_rate: SpikeRate::from_count(Nanos(100_000), 2, Nanos(3_600_000_000_000), 0.95),
        }
    }

    /// A run `hours_ago` hours before [`now`] (`None`: start unknown).
    fn run(id: &str, hours_ago: Option<u64>, verdict: &str, series: Vec<SeriesFigures>) -> FarmRun {
        FarmRun {
            id: id.to_string(),
            host: Some("h".to_string()),
            kernel: Some("6.18.0-rt".to_string()),
            started_at: hours_ago.map(|h| now() - Duration::from_secs(h * HOUR)),
            added_at: Some(now()),
            verdict: verdict.to_string(),
            progress: None,
            series,
        }
    }

    #[test]
    fn windows_count_back_from_now_by_start_and_unknown_starts_are_only_in_all() {
        let at = |hours: u64| Some(now() - Duration::from_secs(hours * HOUR));
        assert!(Window::Day.holds(at(23), now()));
        assert!(!Window::Day.holds(at(24), now()));
        assert!(Window::Week.holds(at(24), now()));
        assert!(!Window::Week.holds(at(7 * 24), now()));
        assert!(Window::All.holds(at(100_000), now()));
        assert!(!Window::Day.holds(None, now()) && Window::All.holds(None, now()));
        // A rig whose clock is ahead: in the last day.
        assert!(Window::Day.holds(Some(now() + Duration::from_secs(60)), now()));
    }

    #[test]
    fn the_worst_is_a_bound_when_a_figure_is_one_or_unknown_and_unknown_when_none_is_known() {
        assert_eq!(worst([Some(exact(5)), Some(exact(9))]), Some(exact(9)));
        assert_eq!(worst([Some(bound(3)), Some(exact(9))]), Some(bound(9)));
        assert_eq!(worst([None, Some(exact(9))]), Some(bound(9)));
        assert_eq!(worst([None, None]), None);
        assert_eq!(worst([]), None);
    }

    /// rig1 ran a timer series four times (one 2 days ago with a bound, one 10 days
    /// ago) and a noise series once; rig2 a timer series whose p99.9 is unknown.
    pub(super) fn farm() -> Farm {
        let timer = |max, p999| figures("host:rig1", "timer", max, p999);
        let runs = vec![
            run(
                "a-old",
                Some(240),
                "pass",
                vec![timer(Some(900), Some(exact(500)))],
            ),
            run(
                "b-bound",
                Some(48),
                "pass",
                vec![timer(Some(300), Some(bound(200)))],
            ),
            run("c", Some(5), "pass", vec![timer(Some(50), Some(exact(20)))]),
            run(
                "d-latest",
                Some(1),
                "fail",
                vec![
                    timer(Some(80), Some(exact(30))),
                    figures("host:rig1", "noise", Some(7), Some(exact(4))),
                ],
            ),
            FarmRun {
                // Imported a month ago from a file without its start.
                added_at: Some(now() - Duration::from_secs(720 * HOUR)),
                ..run(
                    "e",
                    None,
                    "pass",
                    vec![figures("host:rig2", "timer", Some(40), None)],
                )
            },
            run(
                "f",
                Some(2),
                "pass",
                vec![figures("host:rig2", "timer", Some(60), Some(exact(10)))],
            ),
        ];
        Farm::of(runs, now())
    }

    fn window(series: &FarmSeries, w: Window) -> &WindowFigures {
        &series.windows.iter().find(|(x, _)| *x == w).unwrap().1
    }

    #[test]
    fn each_series_has_its_worst_figures_per_window_and_probes_stay_apart() {
        let farm = farm();
        assert_eq!(farm.rigs.len(), 2);
        let rig1 = &farm.rigs[0];
        assert_eq!(rig1.rig, "host:rig1");
        assert_eq!(rig1.latest.id, "d-latest");
        assert_eq!(rig1.runs, [2, 3, 4]);
        let probes: Vec<&str> = rig1.series.iter().map(|s| s.key.probe.as_str()).collect();
        assert_eq!(probes, ["noise", "timer"]);
        let timer = &rig1.series[1];
        let day = window(timer, Window::Day);
        assert_eq!((day.runs, day.samples), (2, 2_000));
        assert_eq!((day.max, day.p99_9), (Some(exact(80)), Some(exact(30))));
        let week = window(timer, Window::Week);
        assert_eq!((week.max, week.p99_9), (Some(exact(300)), Some(bound(200))));
        let all = window(timer, Window::All);
        assert_eq!(
            (all.runs, all.max, all.p99_9),
            (4, Some(exact(900)), Some(bound(500)))
        );
        // Four runs of 2 spikes in an hour each: 2 per hour.
        assert_eq!(
            all.spike_rate.map(|r| (r.count, r.per_hour)),
            Some((8, 2.0))
        );
        // The noise series is its own: one run, nothing to compare with.
        let noise = &rig1.series[0];
        assert_eq!(window(noise, Window::All).max, Some(exact(7)));
        assert_eq!(noise.judgement, Judgement::FirstRun);
        assert_eq!(
            (timer.latest.as_str(), timer.previous.as_deref()),
            ("d-latest", Some("c"))
        );
        assert_eq!(timer.judgement, Judgement::NotJudged);
    }

    #[test]
    fn an_unknown_figure_makes_the_worst_a_bound_and_an_unknown_start_counts_in_all_only() {
        let farm = farm();
        let rig2 = &farm.rigs[1].series[0];
        let day = window(rig2, Window::Day);
        assert_eq!((day.runs, day.p99_9), (1, Some(exact(10))));
        let all = window(rig2, Window::All);
        assert_eq!((all.runs, all.p99_9), (2, Some(bound(10))));
        // Ordered by its added time when its start is unknown: before the run of 2 h ago.
        assert_eq!(farm.rigs[1].latest.id, "f");
        assert_eq!(farm.runs_in(Window::Day), 3);
        assert_eq!(farm.runs_in(Window::All), 6);
        let none = WindowFigures::of(&[]);
        assert_eq!(
            (none.runs, none.max, none.p99_9, none.spike_rate),
            (0, None, None, None)
        );
    }

    #[test]
    fn failing_counts_rigs_whose_latest_run_failed_or_died() {
        let mut farm = farm();
        assert_eq!(farm.failing(), 1);
        farm.rigs[1].latest.progress = Some(latlab_model::fixture::progress(RunState::Died));
        assert_eq!(farm.failing(), 2);
        assert!(!run("x", None, "no-thresholds", vec![]).failed());
        assert!(run("x", None, "untrusted", vec![]).failed());
    }

    /// The example run, its p99.9 region moved by `shift` ns per sample: the same
    /// histogram shape, slower.
    fn example(id: &str, shift: i64) -> Run {
        let mut run = Run::from_json(include_str!("../../../../docs/example-run.json")).unwrap();
        run.id = id.to_string();
        for stream in &mut run.streams {
            let h = stream.decode_histogram().unwrap().unwrap();
            let mut moved = latlab_model::hist::LatencyHistogram::new();
            for (value, count) in h.buckets() {
                moved.record_n(value as i64 + shift, count).unwrap();
            }
            stream.histogram = Some(latlab_model::run::EncodedHistogram::from_histogram(&moved));
            stream.stats.min_ns = stream.stats.min_ns.map(|n| Nanos(n.0 + shift));
            stream.stats.max_ns = stream.stats.max_ns.map(|n| Nanos(n.0 + shift));
        }
        run
    }

    #[test]
    fn the_latest_run_is_judged_against_the_one_before_by_the_comparisons_verdict() {
        let base = example("base", 0);
        let same = example("same", 0);
        // Slower by more than the example's whole spread: apart beyond both intervals.
        let slower = example("slower", 50_000_000);
        assert_eq!(judge(&base, &same, "timer").flag(), Some(Flag::Same));
        assert_eq!(judge(&base, &slower, "timer").flag(), Some(Flag::Worse));
        assert_eq!(judge(&slower, &base, "timer").flag(), Some(Flag::Better));
        // A probe neither ran: no samples, no verdict.
        assert_eq!(judge(&base, &same, "noise").flag(), Some(Flag::Undecided));

        let of = |run: &Run, hours| FarmRun {
            series: SeriesFigures::of_run(run),
            ..super::tests::run(&run.id, Some(hours), "pass", vec![])
        };
        let runs = vec![of(&base, 3), of(&slower, 1)];
        let mut asked = Vec::new();
        let farm = Farm::gather(runs, now(), |id| {
            asked.push(id.to_string());
            Ok::<_, ()>(Some(match id {
                "base" => base.clone(),
                _ => slower.clone(),
            }))
        })
        .unwrap();
        assert_eq!(asked, ["base", "slower"], "each run loaded once");
        let (rig, series) = farm.regressions().next().expect("a regression");
        assert_eq!(
            (rig.latest.id.as_str(), series.previous.as_deref()),
            ("slower", Some("base"))
        );
        assert!(matches!(
            series.judgement,
            Judgement::Judged { relative_change: Some(r), .. } if r > 0.0
        ));
    }
}
