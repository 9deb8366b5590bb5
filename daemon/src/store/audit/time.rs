//! RFC 3339 timestamps for the `ts` column: always UTC, always milliseconds,
//! fixed width (`YYYY-MM-DDTHH:MM:SS.mmmZ`), so text order is time order.

use std::time::{SystemTime, UNIX_EPOCH};

use praxis_calendar::format_ms;

use super::error::AuditError;

/// The current time as stored in `ts`.
pub(crate) fn now() -> String {
    let ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        // A clock before 1970 is nonsense, but the record must still be written.
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    };
    format_ms(ms)
}

/// Parses `YYYY-MM-DD` (midnight UTC) or a full RFC 3339 date-time with `Z`
/// or a numeric offset, into the stored form. Fractions beyond milliseconds
/// are truncated.
pub(crate) fn normalize(text: &str) -> Result<String, AuditError> {
    praxis_calendar::parse_date_time(text)
        .or_else(|| praxis_calendar::parse_date(text))
        .map(format_ms)
        .ok_or_else(|| AuditError::BadTimestamp(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_stored_in_the_form_it_is_read_back_in() {
        assert_eq!(normalize("2023-11-14").unwrap(), "2023-11-14T00:00:00.000Z");
        assert_eq!(
            normalize("2023-11-14T23:13:20+01:00").unwrap(),
            "2023-11-14T22:13:20.000Z"
        );
        let now = now();
        assert_eq!(normalize(&now).unwrap(), now);
        assert!(normalize("2023-11-14T22:13:20").is_err());
    }
}
