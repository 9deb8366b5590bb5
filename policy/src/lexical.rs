//! Path arithmetic on text alone: no file system is asked. The classifier,
//! the host context and the rules all compare paths this way.

/// Lexically normalizes `path` (absolute): drops `.` and empty components, resolves `..`.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut out = String::with_capacity(path.len());
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Whether `path` is `dir` or inside it (both normalized).
pub fn is_within(path: &str, dir: &str) -> bool {
    if dir == "/" {
        return true;
    }
    path.strip_prefix(dir)
        .is_some_and(|t| t.is_empty() || t.starts_with('/'))
}
