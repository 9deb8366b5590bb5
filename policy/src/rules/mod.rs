//! Rule engine: loading and validating policy files, deny-first evaluation.
