//! Redactor: masks secrets in text before it is shown, audited or logged.
