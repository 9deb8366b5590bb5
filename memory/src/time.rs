//! RFC 3339 timestamps as whole seconds since the Unix epoch. The crate
//! never reads a clock: "now" is always passed in by the caller.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Seconds in one day.
pub const DAY: i64 = 86_400;

/// A point in time, to the second, in UTC. Written as `YYYY-MM-DDTHH:MM:SSZ`;
/// read from any RFC 3339 form (fractions are dropped, offsets applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

/// Why a timestamp could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 date-time (YYYY-MM-DDTHH:MM:SSZ or with an offset)")]
pub struct TimestampError {
    pub text: String,
}

impl Timestamp {
    /// Seconds since the epoch.
    pub fn unix(self) -> i64 {
        self.0
    }

    /// This time plus `seconds` (negative goes back).
    #[must_use]
    pub fn plus(self, seconds: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(seconds))
    }

    pub fn parse(text: &str) -> Result<Timestamp, TimestampError> {
        parse_rfc3339(text.as_bytes()).ok_or_else(|| TimestampError {
            text: text.to_owned(),
        })
    }
}

fn digits(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(bytes.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
}

/// Days from 1970-01-01 to the given proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    // Count from March so the leap day is the last day of the counted year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn parse_rfc3339(b: &[u8]) -> Option<Timestamp> {
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (hour, minute, second) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    if rest.first() == Some(&b'.') {
        let fraction = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if fraction == 0 {
            return None;
        }
        rest = &rest[1 + fraction..];
    }
    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = h * 60 + m;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let seconds = days_from_civil(year, month, day) * DAY + hour * 3600 + minute * 60 + second;
    Some(Timestamp(seconds - offset * 60))
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(DAY);
        let secs = self.0.rem_euclid(DAY);
        // Inverse of days_from_civil.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z - era * 146_097;
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
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utc_offsets_and_fractions() {
        assert_eq!(Timestamp::parse("1970-01-01T00:00:00Z").unwrap().0, 0);
        assert_eq!(
            Timestamp::parse("2026-11-24T13:00:00Z").unwrap(),
            Timestamp::parse("2026-11-24T15:00:00.123+02:00").unwrap()
        );
        assert_eq!(
            Timestamp::parse("2000-03-01T00:00:00Z").unwrap().0
                - Timestamp::parse("2000-02-28T00:00:00Z").unwrap().0,
            2 * DAY
        );
    }

    #[test]
    fn writes_what_it_reads() {
        for text in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-11-24T13:09:23Z",
            "2100-12-31T00:00:01Z",
            "1969-07-20T20:17:40Z",
        ] {
            assert_eq!(Timestamp::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn refuses_what_is_not_a_date_time() {
        for text in [
            "",
            "2026-11-24",
            "2026-11-24T13:00:00",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-24T24:00:00Z",
            "2026-11-24T13:00:00.Z",
            "2026-11-24T13:00:00+2:00",
            "yesterday at noon, roughly",
        ] {
            assert!(Timestamp::parse(text).is_err(), "{text}");
        }
    }
}
