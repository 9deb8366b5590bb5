//! What the judge API refuses to store by default: secret-like data and
//! transcript-sized dumps. The secret test comes from the caller (the daemon
//! passes its redactor), so this crate holds no secret rules of its own.

use serde::Serialize;
use serde_json::Value;

use crate::contract::ActionProposal;

/// Size rules for one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntakeLimits {
    /// Longest string one field may hold, in bytes.
    pub max_field_bytes: usize,
    /// Most lines one field may hold.
    pub max_field_lines: usize,
    /// Largest document, in bytes of its strings.
    pub max_total_bytes: usize,
}

impl Default for IntakeLimits {
    /// Summaries and digests fit easily; a pasted conversation or log does not.
    fn default() -> Self {
        IntakeLimits {
            max_field_bytes: 4096,
            max_field_lines: 40,
            max_total_bytes: 32 * 1024,
        }
    }
}

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    #[error("{field}: looks like a secret; secret-like data is not stored")]
    SecretLike { field: String },
    #[error("sensitivity.contains_secret_like_data is true; secret-like data is not stored")]
    FlaggedSecret,
    #[error(
        "{field}: {bytes} bytes is transcript-sized (limit {limit}); store a summary and a digest"
    )]
    FieldTooLarge {
        field: String,
        bytes: usize,
        limit: usize,
    },
    #[error("{field}: {lines} lines is transcript-sized (limit {limit}); store a summary")]
    TooManyLines {
        field: String,
        lines: usize,
        limit: usize,
    },
    /// Fails closed: what cannot be read is not stored.
    #[error("the document cannot be read for screening: {0}")]
    Unreadable(String),
    #[error("the document's text is {bytes} bytes (limit {limit}); store summaries, not dumps")]
    TooLarge { bytes: usize, limit: usize },
}

impl IntakeError {
    /// The path of the field at fault, when one is.
    pub fn field(&self) -> Option<&str> {
        match self {
            IntakeError::SecretLike { field }
            | IntakeError::FieldTooLarge { field, .. }
            | IntakeError::TooManyLines { field, .. } => Some(field),
            IntakeError::FlaggedSecret => Some("sensitivity.contains_secret_like_data"),
            IntakeError::Unreadable(_) | IntakeError::TooLarge { .. } => None,
        }
    }
}

/// Refuses `document` when any string in it is secret-like or too large.
/// Errors name the field (`evidence.source_refs[0].summary`).
pub fn screen<T: Serialize>(
    document: &T,
    is_secret: &dyn Fn(&str) -> bool,
    limits: &IntakeLimits,
) -> Result<(), IntakeError> {
    let value =
        serde_json::to_value(document).map_err(|e| IntakeError::Unreadable(e.to_string()))?;
    let mut total = 0usize;
    walk(&value, &mut String::new(), &mut |field, text| {
        total += text.len();
        if text.len() > limits.max_field_bytes {
            return Err(IntakeError::FieldTooLarge {
                field: field.to_owned(),
                bytes: text.len(),
                limit: limits.max_field_bytes,
            });
        }
        let lines = text.lines().count();
        if lines > limits.max_field_lines {
            return Err(IntakeError::TooManyLines {
                field: field.to_owned(),
                lines,
                limit: limits.max_field_lines,
            });
        }
        if is_secret(text) {
            return Err(IntakeError::SecretLike {
                field: field.to_owned(),
            });
        }
        Ok(())
    })?;
    if total > limits.max_total_bytes {
        return Err(IntakeError::TooLarge {
            bytes: total,
            limit: limits.max_total_bytes,
        });
    }
    Ok(())
}

/// [`screen`] for a proposal, which also refuses one its actor flags as
/// carrying secret-like data.
pub fn screen_proposal(
    proposal: &ActionProposal,
    is_secret: &dyn Fn(&str) -> bool,
    limits: &IntakeLimits,
) -> Result<(), IntakeError> {
    if proposal.sensitivity.contains_secret_like_data {
        return Err(IntakeError::FlaggedSecret);
    }
    screen(proposal, is_secret, limits)
}

fn walk(
    value: &Value,
    path: &mut String,
    visit: &mut dyn FnMut(&str, &str) -> Result<(), IntakeError>,
) -> Result<(), IntakeError> {
    let len = path.len();
    let result = match value {
        Value::String(text) => visit(path, text),
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            path.push_str(&format!("[{i}]"));
            let r = walk(item, path, visit);
            path.truncate(len);
            r
        }),
        Value::Object(fields) => fields.iter().try_for_each(|(key, item)| {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            let r = walk(item, path, visit);
            path.truncate(len);
            r
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    };
    path.truncate(len);
    result
}
