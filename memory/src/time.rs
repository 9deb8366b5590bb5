//! RFC 3339 timestamps as whole seconds since the Unix epoch. The crate
//! never reads a clock: "now" is always passed in by the caller.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Seconds in one day.
pub const DAY: i64 = praxis_calendar::MS_PER_DAY / 1000;

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
        praxis_calendar::parse_date_time(text)
            .map(|ms| Timestamp(ms.div_euclid(1000)))
            .ok_or_else(|| TimestampError {
                text: text.to_owned(),
            })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&praxis_calendar::format_seconds(
            self.0.saturating_mul(1000),
        ))
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
    fn whole_seconds_in_and_out() {
        assert_eq!(
            Timestamp::parse("2026-11-24T13:00:00Z").unwrap(),
            Timestamp::parse("2026-11-24T15:00:00.923+02:00").unwrap()
        );
        let text = "2026-11-24T13:09:23Z";
        assert_eq!(Timestamp::parse(text).unwrap().to_string(), text);
        assert_eq!(
            Timestamp::parse(text).unwrap().plus(DAY).to_string(),
            "2026-11-25T13:09:23Z"
        );
        assert!(Timestamp::parse("2026-11-24").is_err());
    }
}
