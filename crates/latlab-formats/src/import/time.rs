//! Timestamps as rt-tests writes them, turned into the Run's RFC 3339 UTC.
//!
//! `rt_write_json` (rt-tests `src/lib/rt-utils.c`, `get_timestamp`) formats local time
//! with `strftime("%a, %d %b %Y %T %z")`, the RFC 2822 form:
//! `Sat, 21 Nov 2026 02:30:05 +0100`.

/// `Sat, 21 Nov 2026 02:30:05 +0100` as `2026-11-21T01:30:05.000Z`; `None` when the text
/// is not in that form.
pub(super) fn rfc2822_to_rfc3339(text: &str) -> Option<String> {
    let utc = rfc2822_seconds(text)?;
    let (days, secs) = (utc.div_euclid(86_400), utc.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.000Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    ))
}

/// Seconds since 1970-01-01 UTC of an RFC 2822 timestamp.
pub(super) fn rfc2822_seconds(text: &str) -> Option<i64> {
    let rest = text.trim();
    // The weekday is optional in RFC 2822 and says nothing the date does not.
    let rest = match rest.split_once(", ") {
        Some((_, r)) => r,
        None => rest,
    };
    let mut fields = rest.split_ascii_whitespace();
    let day: i64 = fields.next()?.parse().ok()?;
    let month = month_number(fields.next()?)?;
    let year: i64 = fields.next()?.parse().ok()?;
    let mut hms = fields.next()?.split(':');
    let hour: i64 = hms.next()?.parse().ok()?;
    let minute: i64 = hms.next()?.parse().ok()?;
    let second: i64 = hms.next()?.parse().ok()?;
    let zone = fields.next()?;
    if fields.next().is_some() || hms.next().is_some() {
        return None;
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let offset_minutes =
        sign * (digits[..2].parse::<i64>().ok()? * 60 + digits[2..].parse::<i64>().ok()?);
    if !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
    Some(local - offset_minutes * 60)
}

/// `2026-11-21T01:30:05.123Z` (a Run's timestamp) as `Sat, 21 Nov 2026 01:30:05 +0000`,
/// the form rt-tests writes; `None` when the text is not an RFC 3339 UTC timestamp.
pub(crate) fn rfc3339_to_rfc2822(text: &str) -> Option<String> {
    let (date, time) = text.trim().strip_suffix('Z')?.split_once('T')?;
    let mut ymd = date.split('-').map(|f| f.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let hms = time.split('.').next()?;
    let mut parts = hms.split(':').map(|f| f.parse::<i64>().ok());
    let (hour, minute, second) = (parts.next()??, parts.next()??, parts.next()??);
    if ymd.next().is_some()
        || parts.next().is_some()
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
    {
        return None;
    }
    // 1970-01-01 was a Thursday.
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    let weekday = DAYS[days_from_civil(y, m, d).rem_euclid(7) as usize];
    Some(format!(
        "{weekday}, {d:02} {} {y:04} {hour:02}:{minute:02}:{second:02} +0000",
        MONTHS[m as usize - 1]
    ))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn month_number(name: &str) -> Option<i64> {
    MONTHS.iter().position(|m| *m == name).map(|i| i as i64 + 1)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_utc() {
        assert_eq!(
            rfc2822_to_rfc3339("Sat, 21 Nov 2026 02:30:05 +0000").as_deref(),
            Some("2026-11-21T02:30:05.000Z")
        );
        assert_eq!(
            rfc2822_to_rfc3339("Sun, 01 Mar 2026 00:10:00 +0130").as_deref(),
            Some("2026-02-28T22:40:00.000Z")
        );
        assert_eq!(
            rfc2822_to_rfc3339("Thu, 31 Dec 2026 23:00:00 -0200").as_deref(),
            Some("2027-01-01T01:00:00.000Z")
        );
        assert_eq!(rfc2822_to_rfc3339("yesterday"), None);
        assert_eq!(
            rfc3339_to_rfc2822("2026-11-21T02:23:07.404Z").as_deref(),
            Some("Sat, 21 Nov 2026 02:23:07 +0000")
        );
        assert_eq!(rfc3339_to_rfc2822(""), None);
        assert_eq!(rfc2822_to_rfc3339("Sat, 21 Nov 2026 02:30:05"), None);
    }
}
