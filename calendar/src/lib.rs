//! RFC 3339 date-times as milliseconds since the Unix epoch, in UTC, on the
//! proleptic Gregorian calendar. One implementation for every store that
//! writes or reads times (the audit log, judgment memory); no clock is read
//! here, "now" always comes from the caller.

#![forbid(unsafe_code)]

/// Milliseconds in one day.
pub const MS_PER_DAY: i64 = 86_400_000;

/// Reads an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS`, an optional
/// fraction (digits beyond milliseconds are dropped), then `Z` or a
/// `±HH:MM` offset, which is applied. `t` and a space are accepted for `T`,
/// `z` for `Z`. `None` for anything else, including impossible dates.
pub fn parse_date_time(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let date_ms = date_at(bytes)?;
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
    let (millis, pos) = fraction_ms(bytes, 19)?;
    let offset_ms = offset_ms(bytes, pos)?;
    Some(date_ms + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset_ms)
}

/// Reads a bare `YYYY-MM-DD` as midnight UTC of that day.
pub fn parse_date(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() != 10 {
        return None;
    }
    date_at(bytes)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`: fixed width, so text order is time order.
pub fn format_ms(ms: i64) -> String {
    let (date, in_day) = split(ms);
    format!("{date}.{:03}Z", in_day % 1000)
}

/// `YYYY-MM-DDTHH:MM:SSZ`: the time to the second (milliseconds dropped).
pub fn format_seconds(ms: i64) -> String {
    let (date, _) = split(ms);
    format!("{date}Z")
}

/// The date and time to the second, and the milliseconds into the day.
fn split(ms: i64) -> (String, i64) {
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
    let text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
    );
    (text, in_day)
}

/// The `YYYY-MM-DD` at the start of `bytes`, as milliseconds at midnight UTC.
fn date_at(bytes: &[u8]) -> Option<i64> {
    if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
        return None;
    }
    let (year, month, day) = (
        digits(bytes, 0, 4)?,
        digits(bytes, 5, 2)?,
        digits(bytes, 8, 2)?,
    );
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day) * MS_PER_DAY)
}

/// An optional `.digits` fraction at `pos`: its milliseconds, and where the
/// text goes on after it.
fn fraction_ms(bytes: &[u8], mut pos: usize) -> Option<(i64, usize)> {
    if bytes.get(pos) != Some(&b'.') {
        return Some((0, pos));
    }
    pos += 1;
    let start = pos;
    let mut millis = 0;
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
    Some((millis, pos))
}

/// The `Z` or `±HH:MM` that must end the text at `pos`, in milliseconds
/// east of UTC.
fn offset_ms(bytes: &[u8], pos: usize) -> Option<i64> {
    match bytes.get(pos)? {
        b'Z' | b'z' if bytes.len() == pos + 1 => Some(0),
        sign @ (b'+' | b'-') if bytes.len() == pos + 6 && bytes[pos + 3] == b':' => {
            let (hours, minutes) = (digits(bytes, pos + 1, 2)?, digits(bytes, pos + 4, 2)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let magnitude = (hours * 60 + minutes) * 60_000;
            Some(if *sign == b'+' { magnitude } else { -magnitude })
        }
        _ => None,
    }
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
        assert_eq!(format_seconds(1_700_000_000_123), "2023-11-14T22:13:20Z");
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
    fn reads_offsets_fractions_and_dates() {
        let read = |text| parse_date_time(text).map(format_ms);
        assert_eq!(
            read("2023-11-14T23:13:20.1234+01:00").as_deref(),
            Some("2023-11-14T22:13:20.123Z")
        );
        assert_eq!(
            read("2023-11-14t22:13:20.5z").as_deref(),
            Some("2023-11-14T22:13:20.500Z")
        );
        assert_eq!(
            read("2024-01-01 00:30:00-01:00").as_deref(),
            Some("2024-01-01T01:30:00.000Z")
        );
        assert_eq!(
            parse_date("2000-03-01").unwrap() - parse_date("2000-02-28").unwrap(),
            2 * MS_PER_DAY
        );
        for text in ["1969-07-20T20:17:40Z", "2100-12-31T00:00:01Z"] {
            assert_eq!(
                parse_date_time(text).map(format_seconds).as_deref(),
                Some(text)
            );
        }
    }

    #[test]
    fn refuses_what_is_not_a_date_time() {
        for bad in [
            "",
            "yesterday",
            "2023-11-14",
            "2023-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2023-11-14T25:00:00Z",
            "2023-11-14T22:13:20",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20+0100",
            "2023-11-14T22:13:20+2:00",
            "2023-11-14T22:13:20Zjunk",
        ] {
            assert_eq!(parse_date_time(bad), None, "{bad:?} accepted");
        }
        for bad in ["2023-02-29", "2023-1-01", "2023-11-14T00:00:00Z"] {
            assert_eq!(parse_date(bad), None, "{bad:?} accepted");
        }
    }
}
