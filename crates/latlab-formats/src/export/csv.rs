//! `csv`: one row per stream with its statistics, in nanoseconds, and whether they
//! were measured or published. Every figure column holds a number or nothing (unknown):
//! a percentile known only as a bound is its bound's number, with `at_least` in its
//! `pNN_bound` column beside it (empty when exact), so a column never turns to text in
//! pandas or R. The spike rate columns count the samples above the run's spike level
//! (`latlab_model::rate`) per hour of the stream's measured span, with the rate's 95 %
//! interval.

use super::{ExportError, Exporter};
use latlab_model::rate::{self, SpikeRate};
use latlab_model::run::{Percentile, Run, REPORTED_PERCENTILES};

pub(super) struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn describe(&self) -> &'static str {
        "one row per stream: phase, CPU, settings, counts, statistics in ns, source"
    }

    fn export(&self, run: &Run) -> Result<String, ExportError> {
        let streams = super::streams_to_export(run, self.name())?;
        // Every row says whether its figures were measured or are a paper's: a line
        // before the header would be read as the header by most CSV readers.
        let source = match &run.published {
            Some(p) => quote(&format!("{}: {}", p.note, p.citation())),
            None => "measured".to_string(),
        };
        let mut out = String::from(
            "run,phase,cpu,thread,probe,method,period_ns,policy,samples,missed_periods,\
             early_wakes,min_ns,mean_ns,stddev_ns",
        );
        for p in REPORTED_PERCENTILES {
            let key = latlab_model::run::percentile_key(p);
            out.push_str(&format!(",p{key}_ns,p{key}_bound"));
        }
        out.push_str(
            ",max_ns,measured_ns,spike_level_ns,spikes,spikes_per_hour,spikes_per_hour_low,\
             spikes_per_hour_high,source\n",
        );
        let level = rate::level_of(run);
        // Unknown is an empty cell; a bound is its number and `at_least` beside it.
        let n = |v: Option<latlab_model::Nanos>| v.map_or(String::new(), |n| n.0.to_string());
        let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.1}"));
        let count = |v: Option<u64>| v.map_or(String::new(), |c| c.to_string());
        let percentile = |v: Option<Percentile>| match v {
            None => ",".to_string(),
            Some(Percentile::Exact(n)) => format!("{},", n.0),
            Some(Percentile::AtLeast { at_least_ns }) => format!("{},at_least", at_least_ns.0),
        };
        for s in streams {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                run.id,
                quote(&s.phase),
                s.cpu.map_or(String::new(), |c| c.to_string()),
                s.thread,
                s.probe,
                quote(s.method.as_deref().unwrap_or("")),
                n(s.period_ns),
                s.policy.map_or(String::new(), |p| p.to_string()),
                s.samples,
                count(s.missed_periods),
                count(s.early_wakes),
                n(s.stats.min_ns),
                f(s.stats.mean_ns),
                f(s.stats.stddev_ns),
            ));
            for p in REPORTED_PERCENTILES {
                out.push_str(&format!(",{}", percentile(s.stats.percentile(p))));
            }
            let spikes = SpikeRate::of_stream(s, level, rate::CONFIDENCE);
            let per_hour =
                |v: fn(&SpikeRate) -> f64| spikes.map_or(String::new(), |r| v(&r).to_string());
            out.push_str(&format!(
                ",{},{},{},{},{},{},{},{source}\n",
                n(s.stats.max_ns),
                n(s.elapsed_ns),
                level.0,
                count(spikes.map(|r| r.count)),
                per_hour(|r| r.per_hour),
                per_hour(|r| r.per_hour_low),
                per_hour(|r| r.per_hour_high),
            ));
        }
        Ok(out)
    }
}

/// Quotes a field if it holds a comma, a quote or a line break (RFC 4180).
pub(super) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_model::fixture;

    #[test]
    fn published_figures_say_so_in_every_row() {
        let run = latlab_model::published::reference_run("rr-table3").unwrap();
        let text = Csv.export(&run).unwrap();
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with("run,phase,"));
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), run.streams.len());
        let source = "\"published figures, not measured here: A. C. Heursch, H. Rzehak: \
                      Rapid Reaction Linux, Proceedings of the 5th Annual Linux Showcase & \
                      Conference (ALS 2001), Oakland, CA, Table 3\"";
        for row in rows {
            assert!(row.starts_with("ref:rr-table3,"), "{row}");
            assert!(row.ends_with(&format!(",{source}")), "{row}");
        }
    }

    #[test]
    fn one_row_per_stream_with_every_statistic() {
        let text = Csv.export(&fixture::run()).unwrap();
        insta::assert_snapshot!(text, @r"
            run,phase,cpu,thread,probe,method,period_ns,policy,samples,missed_periods,early_wakes,min_ns,mean_ns,stddev_ns,p50_ns,p50_bound,p90_ns,p90_bound,p99_ns,p99_bound,p99.9_ns,p99.9_bound,p99.99_ns,p99.99_bound,p99.999_ns,p99.999_bound,max_ns,measured_ns,spike_level_ns,spikes,spikes_per_hour,spikes_per_hour_low,spikes_per_hour_high,source
            20261121T000000Z-abcdef,main,0,0,timer,abs,1000000,fifo:95,4,1,0,2500,5475.0,4028.9,3101,,12400,,12400,,12400,,12400,,12400,,12400,1000000000,20000,0,0,0,13279.966033886758,measured
            20261121T000000Z-abcdef,main,1,1,timer,abs,1000000,fifo:95,5,1,0,1200,10480.0,17263.8,2000,,45000,,45000,,45000,,45000,,45000,,45000,1000000000,20000,1,3600,91.14410874344358,20057.91620738002,measured
        ");
    }

    #[test]
    fn what_a_source_lacked_is_an_empty_cell_never_a_stand_in() {
        let mut run = fixture::run();
        for s in &mut run.streams {
            s.cpu = None;
            s.method = None;
            s.period_ns = None;
            s.policy = None;
            s.missed_periods = None;
            s.early_wakes = None;
            s.stats.stddev_ns = None;
        }
        let text = Csv.export(&run).unwrap();
        insta::assert_snapshot!(text, @r"
            run,phase,cpu,thread,probe,method,period_ns,policy,samples,missed_periods,early_wakes,min_ns,mean_ns,stddev_ns,p50_ns,p50_bound,p90_ns,p90_bound,p99_ns,p99_bound,p99.9_ns,p99.9_bound,p99.99_ns,p99.99_bound,p99.999_ns,p99.999_bound,max_ns,measured_ns,spike_level_ns,spikes,spikes_per_hour,spikes_per_hour_low,spikes_per_hour_high,source
            20261121T000000Z-abcdef,main,,0,timer,,,,4,,,2500,5475.0,,3101,,12400,,12400,,12400,,12400,,12400,,12400,1000000000,20000,0,0,0,13279.966033886758,measured
            20261121T000000Z-abcdef,main,,1,timer,,,,5,,,1200,10480.0,,2000,,45000,,45000,,45000,,45000,,45000,,45000,1000000000,20000,1,3600,91.14410874344358,20057.91620738002,measured
        ");
    }

    #[test]
    fn a_bound_is_a_number_with_at_least_beside_it() {
        let mut run = fixture::run();
        let key = latlab_model::run::percentile_key(99.9);
        run.streams[0].stats.percentiles_ns.insert(
            key.clone(),
            Percentile::AtLeast {
                at_least_ns: latlab_model::Nanos(400_000),
            },
        );
        let text = Csv.export(&run).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (value, bound) = (at(&format!("p{key}_ns")), at(&format!("p{key}_bound")));
        assert_eq!((rows[0][value], rows[0][bound]), ("400000", "at_least"));
        assert_eq!((rows[1][value], rows[1][bound]), ("45000", ""));
        // Every figure column of every row is a number or empty: never text.
        for row in &rows {
            for (name, cell) in header.iter().zip(row) {
                if name.ends_with("_ns") && !cell.is_empty() {
                    assert!(cell.parse::<f64>().is_ok(), "{name}: {cell}");
                }
            }
        }
    }

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
