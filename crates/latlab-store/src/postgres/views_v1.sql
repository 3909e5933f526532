-- Schema 3: the store as an SQL interface (docs/sql.md). Dashboards and ad-hoc queries
-- read two versioned views, latlab_runs_v1 and latlab_streams_v1, with typed columns:
-- times as timestamptz, latencies and spans as bigint nanoseconds, counts as bigint,
-- NULL for what a run's source did not know, and each percentile's bound in a column
-- of its own. latlab_runs and latlab_streams name the newest version.
--
-- A Run is kept whole in `run` (jsonb): a day-long run on 8 CPUs is half a megabyte,
-- nearly all of it histograms, timelines and kept spikes, and PostgreSQL must
-- decompress a jsonb value whole to read any field of it. So the figures the views
-- show are taken from the Run once, as it is written, into `facts` (a few hundred
-- bytes per stream), by the trigger below; the views read only `facts` and the
-- listing's columns. Every value is checked on the way in (an integer where an integer
-- belongs, a time of the Run's own shape), so that no row another program wrote can
-- make a write fail or a view's query stop: what does not check out is NULL.

-- Each statement may find what it makes there already (a store whose version was set
-- back by hand): it is made again, the same.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS facts jsonb;

-- An integer a bigint holds, else NULL.
CREATE OR REPLACE FUNCTION latlab_integer(v jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'number' AND v::text ~ '^-?[0-9]{1,18}$'
                THEN v::text::bigint END
$$;

-- A number a double holds (jsonb writes numbers out in full, so a short one is in
-- range), else NULL.
CREATE OR REPLACE FUNCTION latlab_float(v jsonb) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'number' AND length(v::text) <= 40
                THEN v::text::double precision END
$$;

-- A string, else NULL.
CREATE OR REPLACE FUNCTION latlab_string(v jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'string' THEN v #>> '{}' END
$$;

-- A time as the Run writes it (RFC 3339 in UTC), written back in one shape for
-- jsonb_to_record to read as timestamptz; NULL for anything else (a word such as
-- 'now' that PostgreSQL would take for a time included).
CREATE OR REPLACE FUNCTION latlab_time(v jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    t text := latlab_string(v);
BEGIN
    IF t IS NULL
       OR t !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$' THEN
        RETURN NULL;
    END IF;
    RETURN to_char(t::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
EXCEPTION WHEN others THEN
    -- A day or an hour out of range (2026-02-30).
    RETURN NULL;
END
$$;

-- A percentile's value: the number, or the bound of {"at_least_ns": N}.
CREATE OR REPLACE FUNCTION latlab_percentile_ns(v jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(latlab_integer(v), latlab_integer(v -> 'at_least_ns'))
$$;

-- What a percentile's value is when it is a bound ('at_least'); NULL for a value.
CREATE OR REPLACE FUNCTION latlab_percentile_bound(v jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN latlab_integer(v) IS NULL AND latlab_integer(v -> 'at_least_ns') IS NOT NULL
                THEN 'at_least' END
$$;

-- One stream's figures, under the names of latlab_streams_v1's columns; absent keys
-- read as NULL. (One expression, which the planner inlines into latlab_facts.)
CREATE OR REPLACE FUNCTION latlab_stream_facts(s jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'probe', latlab_string(s -> 'probe'),
        'method', latlab_string(s -> 'method'),
        'phase', latlab_string(s -> 'phase'),
        'thread', latlab_integer(s -> 'thread'),
        'cpu', latlab_integer(s -> 'cpu'),
        'policy', latlab_string(s -> 'policy' -> 'policy'),
        'priority', latlab_integer(s -> 'policy' -> 'priority'),
        'period_ns', latlab_integer(s -> 'period_ns'),
        'samples', latlab_integer(s -> 'samples'),
        'missed_periods', latlab_integer(s -> 'missed_periods'),
        'overrun_wakes', latlab_integer(s -> 'overrun_wakes'),
        'early_wakes', latlab_integer(s -> 'early_wakes'),
        'first_sample_ns', latlab_integer(s -> 'first_sample_ns'),
        'elapsed_ns', latlab_integer(s -> 'elapsed_ns'),
        'min_ns', latlab_integer(s #> '{stats,min_ns}'),
        'mean_ns', latlab_float(s #> '{stats,mean_ns}'),
        'stddev_ns', latlab_float(s #> '{stats,stddev_ns}'),
        'p50_ns', latlab_percentile_ns(s #> '{stats,percentiles_ns,50}'),
        'p50_bound', latlab_percentile_bound(s #> '{stats,percentiles_ns,50}'),
        'p90_ns', latlab_percentile_ns(s #> '{stats,percentiles_ns,90}'),
        'p90_bound', latlab_percentile_bound(s #> '{stats,percentiles_ns,90}'),
        'p99_ns', latlab_percentile_ns(s #> '{stats,percentiles_ns,99}'),
        'p99_bound', latlab_percentile_bound(s #> '{stats,percentiles_ns,99}'),
        'p99_9_ns', latlab_percentile_ns(s #> '{stats,percentiles_ns,99.9}'),
        'p99_9_bound', latlab_percentile_bound(s #> '{stats,percentiles_ns,99.9}'),
        'p99_99_ns', latlab_percentile_ns(s #> '{stats,percentiles_ns,99.99}'),
        'p99_99_bound', latlab_percentile_bound(s #> '{stats,percentiles_ns,99.99}'),
        'p99_999_ns', latlab_percentile_ns(s #> '{stats,percentiles_ns,99.999}'),
        'p99_999_bound', latlab_percentile_bound(s #> '{stats,percentiles_ns,99.999}'),
        'max_ns', latlab_integer(s #> '{stats,max_ns}'),
        'spike_level_ns', latlab_integer(s #> '{spikes,threshold_ns}'),
        -- Every sample above the level is kept, or counted as dropped.
        'spikes', CASE WHEN latlab_integer(s #> '{spikes,threshold_ns}') IS NOT NULL
                            AND jsonb_typeof(s #> '{spikes,above_threshold}') = 'array'
                       THEN jsonb_array_length(s #> '{spikes,above_threshold}')
                            + latlab_integer(s #> '{spikes,above_threshold_dropped}')
                  END))
$$;

-- A run's figures under the names of latlab_runs_v1's columns, its streams' under
-- "streams" in the Run's order. A run's percentile is its worst stream's, over the
-- streams that have it, and a bound when any of theirs is (as latlab runs lists it).
CREATE OR REPLACE FUNCTION latlab_facts(run jsonb) RETURNS jsonb
    -- PL/pgSQL keeps the query's plan for the session: a rig writing a checkpoint
    -- every few seconds plans it once.
    LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    -- Read a stored Run out of its compressed form once, not at every field.
    IF jsonb_typeof(run) = 'object' THEN
        run := run || '{}';
    END IF;
    RETURN (WITH stream AS (
        SELECT n, latlab_stream_facts(e) AS f
          FROM jsonb_array_elements(CASE jsonb_typeof(run -> 'streams')
                                        WHEN 'array' THEN run -> 'streams'
                                        ELSE '[]' END) WITH ORDINALITY AS s(e, n)
    ), figure AS (
        SELECT n, (f ->> 'samples')::bigint AS samples,
               (f ->> 'missed_periods')::bigint AS missed_periods,
               (f ->> 'early_wakes')::bigint AS early_wakes,
               (f ->> 'elapsed_ns')::bigint AS elapsed_ns,
               (f ->> 'min_ns')::bigint AS min_ns, (f ->> 'max_ns')::bigint AS max_ns,
               (f ->> 'p50_ns')::bigint AS p50_ns, f ? 'p50_bound' AS p50_bound,
               (f ->> 'p90_ns')::bigint AS p90_ns, f ? 'p90_bound' AS p90_bound,
               (f ->> 'p99_ns')::bigint AS p99_ns, f ? 'p99_bound' AS p99_bound,
               (f ->> 'p99_9_ns')::bigint AS p99_9_ns, f ? 'p99_9_bound' AS p99_9_bound,
               (f ->> 'p99_99_ns')::bigint AS p99_99_ns, f ? 'p99_99_bound' AS p99_99_bound,
               (f ->> 'p99_999_ns')::bigint AS p99_999_ns, f ? 'p99_999_bound' AS p99_999_bound,
               (f ->> 'spike_level_ns')::bigint AS spike_level_ns,
               (f ->> 'spikes')::bigint AS spikes,
               f ->> 'probe' AS probe
          FROM stream
    ), total AS (
        SELECT count(*) AS stream_count,
               -- A sum is known when every stream's part is (no streams: none).
               CASE WHEN count(*) = count(samples) THEN coalesce(sum(samples), 0) END
                   AS samples,
               CASE WHEN count(*) = count(missed_periods) THEN coalesce(sum(missed_periods), 0) END
                   AS missed_periods,
               CASE WHEN count(*) = count(early_wakes) THEN coalesce(sum(early_wakes), 0) END
                   AS early_wakes,
               CASE WHEN count(*) = count(elapsed_ns) THEN coalesce(sum(elapsed_ns), 0) END
                   AS measured_ns,
               min(min_ns) AS min_ns, max(max_ns) AS max_ns,
               max(p50_ns) AS p50_ns, bool_or(p50_bound AND p50_ns IS NOT NULL) AS p50_bound,
               max(p90_ns) AS p90_ns, bool_or(p90_bound AND p90_ns IS NOT NULL) AS p90_bound,
               max(p99_ns) AS p99_ns, bool_or(p99_bound AND p99_ns IS NOT NULL) AS p99_bound,
               max(p99_9_ns) AS p99_9_ns,
               bool_or(p99_9_bound AND p99_9_ns IS NOT NULL) AS p99_9_bound,
               max(p99_99_ns) AS p99_99_ns,
               bool_or(p99_99_bound AND p99_99_ns IS NOT NULL) AS p99_99_bound,
               max(p99_999_ns) AS p99_999_ns,
               bool_or(p99_999_bound AND p99_999_ns IS NOT NULL) AS p99_999_bound,
               -- One level for all of a run's streams, so that their counts add up.
               CASE WHEN count(DISTINCT spike_level_ns) = 1 AND count(*) = count(spikes)
                    THEN max(spike_level_ns) END AS spike_level_ns,
               CASE WHEN count(DISTINCT spike_level_ns) = 1 AND count(*) = count(spikes)
                    THEN sum(spikes) END AS spikes,
               jsonb_agg(DISTINCT probe) FILTER (WHERE probe IS NOT NULL) AS probes
          FROM figure
    )
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'started_at', latlab_time(run -> 'started_at'),
        'ended_at', latlab_time(run -> 'ended_at'),
        'rig', coalesce(latlab_string(run -> 'host' -> 'rig'),
                        nullif(latlab_string(run -> 'host' -> 'hostname'), '')),
        'host', nullif(latlab_string(run -> 'host' -> 'hostname'), ''),
        'kernel', nullif(latlab_string(run -> 'host' -> 'kernel_release'), ''),
        'preemption', latlab_string(run -> 'host' -> 'preemption' -> 'model'),
        'origin', coalesce('import:' || latlab_string(run -> 'import' -> 'format'), 'latlab'),
        'probes', coalesce(probes, '[]'),
        'interrupted', CASE jsonb_typeof(run -> 'interrupted')
                           WHEN 'boolean' THEN run -> 'interrupted' END,
        'warnings', coalesce((SELECT jsonb_agg(latlab_string(w -> 'code'))
                                FROM jsonb_array_elements(CASE jsonb_typeof(run -> 'warnings')
                                                              WHEN 'array' THEN run -> 'warnings'
                                                              ELSE '[]' END) AS w
                               WHERE latlab_string(w -> 'code') IS NOT NULL), '[]'),
        'stream_count', stream_count,
        'samples', samples,
        'missed_periods', missed_periods,
        'early_wakes', early_wakes,
        'measured_ns', measured_ns,
        'min_ns', min_ns,
        'p50_ns', p50_ns, 'p50_bound', CASE WHEN p50_bound THEN 'at_least' END,
        'p90_ns', p90_ns, 'p90_bound', CASE WHEN p90_bound THEN 'at_least' END,
        'p99_ns', p99_ns, 'p99_bound', CASE WHEN p99_bound THEN 'at_least' END,
        'p99_9_ns', p99_9_ns, 'p99_9_bound', CASE WHEN p99_9_bound THEN 'at_least' END,
        'p99_99_ns', p99_99_ns, 'p99_99_bound', CASE WHEN p99_99_bound THEN 'at_least' END,
        'p99_999_ns', p99_999_ns, 'p99_999_bound', CASE WHEN p99_999_bound THEN 'at_least' END,
        'max_ns', max_ns,
        'spike_level_ns', spike_level_ns,
        'spikes', spikes,
        'streams', coalesce((SELECT jsonb_agg(f ORDER BY n) FROM stream), '[]')))
    FROM total);
END
$$;

CREATE OR REPLACE FUNCTION latlab_runs_facts() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.facts := latlab_facts(NEW.run);
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS runs_facts ON runs;
CREATE TRIGGER runs_facts BEFORE INSERT OR UPDATE OF run ON runs
    FOR EACH ROW EXECUTE FUNCTION latlab_runs_facts();

-- Version 1 of the interface: its columns keep their names, types and meanings; a
-- later version may add columns at the end, and a change that would break a query
-- is a view of its own (latlab_runs_v2), this one kept beside it.
CREATE OR REPLACE VIEW latlab_runs_v1 AS
SELECT r.id, r.name, r.added_at, f.started_at, f.ended_at, f.rig, f.host, f.kernel,
       f.preemption, r.scenario, f.origin, f.probes, coalesce(r.state, 'ended') AS state,
       r.verdict, r.degraded, f.interrupted, f.warnings, coalesce(r.tags, '{}') AS tags,
       r.duration_ns,
       f.stream_count, f.samples, f.missed_periods, f.early_wakes, f.measured_ns,
       f.min_ns, f.p50_ns, f.p50_bound, f.p90_ns, f.p90_bound, f.p99_ns, f.p99_bound,
       f.p99_9_ns, f.p99_9_bound, f.p99_99_ns, f.p99_99_bound, f.p99_999_ns,
       f.p99_999_bound, f.max_ns, f.spike_level_ns, f.spikes,
       (f.spikes * 3.6e12 / nullif(f.measured_ns, 0))::double precision AS spikes_per_hour
  FROM runs r
  LEFT JOIN LATERAL jsonb_to_record(r.facts) AS f(
       started_at timestamptz, ended_at timestamptz, rig text, host text, kernel text,
       preemption text, origin text, probes text[], interrupted boolean, warnings text[],
       stream_count bigint, samples bigint, missed_periods bigint, early_wakes bigint,
       measured_ns bigint, min_ns bigint, p50_ns bigint, p50_bound text, p90_ns bigint,
       p90_bound text, p99_ns bigint, p99_bound text, p99_9_ns bigint, p99_9_bound text,
       p99_99_ns bigint, p99_99_bound text, p99_999_ns bigint, p99_999_bound text,
       max_ns bigint, spike_level_ns bigint, spikes bigint)
    ON true;

CREATE OR REPLACE VIEW latlab_streams_v1 AS
SELECT r.id AS run_id, (e.n - 1)::integer AS stream, run.started_at, run.rig, run.host,
       run.kernel, run.origin, s.probe, s.method, s.phase, s.thread, s.cpu, s.policy,
       s.priority, s.period_ns, s.samples, s.missed_periods, s.overrun_wakes,
       s.early_wakes, s.first_sample_ns, s.elapsed_ns, s.min_ns, s.mean_ns, s.stddev_ns,
       s.p50_ns, s.p50_bound, s.p90_ns, s.p90_bound, s.p99_ns, s.p99_bound, s.p99_9_ns,
       s.p99_9_bound, s.p99_99_ns, s.p99_99_bound, s.p99_999_ns, s.p99_999_bound,
       s.max_ns, s.spike_level_ns, s.spikes,
       (s.spikes * 3.6e12 / nullif(s.elapsed_ns, 0))::double precision AS spikes_per_hour
  FROM runs r
 CROSS JOIN LATERAL jsonb_to_record(r.facts) AS run(
       started_at timestamptz, rig text, host text, kernel text, origin text)
 CROSS JOIN LATERAL jsonb_array_elements(r.facts -> 'streams') WITH ORDINALITY AS e(f, n)
 CROSS JOIN LATERAL jsonb_to_record(e.f) AS s(
       probe text, method text, phase text, thread integer, cpu integer, policy text,
       priority integer, period_ns bigint, samples bigint, missed_periods bigint,
       overrun_wakes bigint, early_wakes bigint, first_sample_ns bigint, elapsed_ns bigint,
       min_ns bigint, mean_ns double precision, stddev_ns double precision, p50_ns bigint,
       p50_bound text, p90_ns bigint, p90_bound text, p99_ns bigint, p99_bound text,
       p99_9_ns bigint, p99_9_bound text, p99_99_ns bigint, p99_99_bound text,
       p99_999_ns bigint, p99_999_bound text, max_ns bigint, spike_level_ns bigint,
       spikes bigint);

CREATE OR REPLACE VIEW latlab_runs AS SELECT * FROM latlab_runs_v1;
CREATE OR REPLACE VIEW latlab_streams AS SELECT * FROM latlab_streams_v1;

COMMENT ON VIEW latlab_runs_v1 IS
    'latlab: one row per run, version 1 of the interface (docs/sql.md)';
COMMENT ON VIEW latlab_streams_v1 IS
    'latlab: one row per measuring thread and phase of a run, version 1 (docs/sql.md)';
COMMENT ON VIEW latlab_runs IS 'latlab: the newest version of latlab_runs_vN (docs/sql.md)';
COMMENT ON VIEW latlab_streams IS
    'latlab: the newest version of latlab_streams_vN (docs/sql.md)';
COMMENT ON COLUMN runs.facts IS
    'latlab: what the views read, taken from run as it is written; not an interface';
