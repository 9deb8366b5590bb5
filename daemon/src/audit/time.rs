//! RFC 3339 timestamps for the `ts` column: always UTC, always milliseconds,
//! fixed width (`YYYY-MM-DDTHH:MM:SS.mmmZ`), so text order is time order.

use std::time::{SystemTime, UNIX_EPOCH};

use super::AuditError;

const MS_PER_DAY: i64 = 86_400_000;

/// The current time as stored in `ts`.
pub(crate) fn now() -> String {
    let ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        // A clock before 1970 is nonsense, but the record must still be written.
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    };
    format_ms(ms)
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn format_ms(ms: i64) -> String {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// Parses `YYYY-MM-DD` (midnight UTC) or a full RFC 3339 date-time with `Z`
/// or a numeric offset, into the stored form. Fractions beyond milliseconds
/// are truncated.
pub(crate) fn normalize(text: &str) -> Result<String, AuditError> {
    parse_ms(text)
        .map(format_ms)
        .ok_or_else(|| AuditError::BadTimestamp(text.to_owned()))
}

fn parse_ms(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let year = digits(bytes, 0, 4)?;
    let month = digits(bytes, 5, 2)?;
    let day = digits(bytes, 8, 2)?;
    if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
        return None;
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let date_ms = days_from_civil(year, month, day) * MS_PER_DAY;
    if bytes.len() == 10 {
        return Some(date_ms);
    }
    if !matches!(bytes.get(10), Some(b'T' | b't' | b' '))
        || bytes.get(13) != Some(&b':')
        || bytes.get(16) != Some(&b':')
    {
        return None;
    }
    let (hour, minute, second) = (
        digits(bytes, 11, 2)?,
        digits(bytes, 14, 2)?,
        digits(bytes, 17, 2)?,
    );
    // 60 admits a leap second, which counts as the next second's start.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut pos = 19;
    let mut millis = 0;
    if bytes.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while bytes.get(pos).is_some_and(u8::is_ascii_digit) {
            if pos - start < 3 {
                millis = millis * 10 + i64::from(bytes[pos] - b'0');
            }
            pos += 1;
        }
        if pos == start {
            return None;
        }
        for _ in (pos - start)..3 {
            millis *= 10;
        }
    }
    let offset_ms = match bytes.get(pos)? {
        b'Z' | b'z' if bytes.len() == pos + 1 => 0,
        sign @ (b'+' | b'-') if bytes.len() == pos + 6 && bytes[pos + 3] == b':' => {
            let (oh, om) = (digits(bytes, pos + 1, 2)?, digits(bytes, pos + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let magnitude = (oh * 60 + om) * 60_000;
            if *sign == b'+' { magnitude } else { -magnitude }
        }
        _ => return None,
    };
    Some(date_ms + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset_ms)
}

fn digits(bytes: &[u8], start: usize, len: usize) -> Option<i64> {
    let slice = bytes.get(start..start + len)?;
    slice.iter().try_fold(0i64, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0'))
    })
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date. Counts in 400-year
/// eras (146 097 days each) of years starting in March, so the leap day is
/// the last day of its year.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719 468 days separate 0000-03-01 from 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(format_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn day_conversion_round_trips_over_centuries() {
        for days in (-800_000..800_000).step_by(97) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn normalizes_offsets_dates_and_fractions() {
        assert_eq!(normalize("2023-11-14").unwrap(), "2023-11-14T00:00:00.000Z");
        assert_eq!(
            normalize("2023-11-14T23:13:20.1234+01:00").unwrap(),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(
            normalize("2023-11-14t22:13:20.5z").unwrap(),
            "2023-11-14T22:13:20.500Z"
        );
        assert_eq!(
            normalize("2024-01-01T00:30:00-01:00").unwrap(),
            "2024-01-01T01:30:00.000Z"
        );
        let now = now();
        assert_eq!(normalize(&now).unwrap(), now);
    }

    #[test]
    fn rejects_malformed_timestamps() {
        for bad in [
            "",
            "yesterday",
            "2023-13-01",
            "2023-02-29",
            "2023-11-14T25:00:00Z",
            "2023-11-14T22:13:20",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20+0100",
            "2023-11-14T22:13:20Zjunk",
        ] {
            assert!(normalize(bad).is_err(), "{bad:?} accepted");
        }
    }
}
