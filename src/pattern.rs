//! `--exclude` patterns with rsync's semantics, so that one pattern means
//! the same to rrr's walk, fsck, watch and the rsync it drives.
//!
//! The rules (rsync(1), "INCLUDE/EXCLUDE PATTERN RULES"):
//! - `*` matches within one path component, `**` across `/`, `?` one
//!   character other than `/`, `[...]` a class (`[!...]`/`[^...]` negated,
//!   ranges, `[:alpha:]`-style classes; never `/`; an unclosed `[` makes
//!   the pattern match nothing); `**/` matches zero or more directories; a
//!   backslash escapes a wildcard character, and is literal in a pattern
//!   without wildcards;
//! - a pattern without `/` (a trailing `/` aside) and without `**` is
//!   matched against the last component only;
//! - otherwise against the path: anchored at the root when it starts with
//!   `/`, else against its end at a component boundary;
//! - a trailing `/` matches directories only; a trailing `/***` matches the
//!   directory and everything in it.
//!
//! Names are bytes: `*`, `**` and a negated class match any byte (a name
//! need not be UTF-8), `?` one character or one byte that is not part of
//! one.
//!
//! Each pattern is compiled to a [`regex::bytes::Regex`], which matches in time
//! linear in the path: a pattern such as `*a*a*a*a*a*a*a*a*b` cannot make a
//! walk take hours, as the earlier backtracking matcher could.

use regex::bytes::Regex;

/// One compiled exclude pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    re: Regex,
    /// Matched against the last component only.
    basename: bool,
    /// Matches directories only (a trailing `/`).
    dir_only: bool,
}

impl Pattern {
    /// Compile `source`; an error says why (an empty pattern, or one too
    /// large to compile).
    pub fn parse(source: &str) -> Result<Pattern, String> {
        let mut body = source;
        let mut dir_only = false;
        let mut all_below = false;
        if let Some(b) = body.strip_suffix("/***") {
            body = b;
            all_below = true;
        } else if let Some(b) = body.strip_suffix('/') {
            body = b;
            dir_only = true;
        }
        let anchored = body.starts_with('/');
        let body = body.trim_start_matches('/');
        if body.is_empty() {
            return Err(format!("exclude pattern {source:?} matches nothing"));
        }
        let basename = !anchored && !body.contains('/') && !body.contains("**") && !all_below;
        let wild = body.contains(['*', '?', '[']);
        let mut re = String::from("(?s)^");
        if !anchored && !basename {
            re.push_str("(?:(?-u:.)*/)?");
        }
        re.push_str(&translate(body, wild));
        if all_below {
            re.push_str("(?:/(?-u:.)*)?");
        }
        re.push('$');
        let re = regex::bytes::RegexBuilder::new(&re)
            .size_limit(1 << 22)
            .build()
            .map_err(|e| format!("exclude pattern {source:?}: {e}"))?;
        Ok(Pattern { source: source.to_string(), re, basename, dir_only })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether this pattern excludes `rel` (relative to the root,
    /// `/`-separated) itself, `is_dir` saying whether it is a directory.
    pub fn matches(&self, rel: impl AsRef<[u8]>, is_dir: bool) -> bool {
        let rel = rel.as_ref();
        if self.dir_only && !is_dir {
            return false;
        }
        let subject = if self.basename { rel.rsplit(|&b| b == b'/').next().unwrap_or(rel) } else { rel };
        self.re.is_match(subject)
    }

    /// Whether `rel` is excluded, itself or through a directory above it
    /// (rsync never descends into an excluded directory).
    pub fn excludes(&self, rel: impl AsRef<[u8]>, is_dir: bool) -> bool {
        let rel = rel.as_ref();
        if self.matches(rel, is_dir) {
            return true;
        }
        rel.iter().enumerate().any(|(i, &b)| b == b'/' && self.matches(&rel[..i], true))
    }
}

/// The regex for a pattern body (no anchoring).
fn translate(body: &str, wild: bool) -> String {
    if !wild {
        return regex::escape(body);
    }
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push_str(&regex::escape(&chars[i + 1].to_string()));
                i += 2;
            }
            '*' if chars.get(i + 1) == Some(&'*') => {
                let component_start = i == 0 || chars[i - 1] == '/';
                i += 2;
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                if component_start && chars.get(i) == Some(&'/') {
                    // `**/` also matches no directory at all.
                    out.push_str("(?:(?-u:.)*/)?");
                    i += 1;
                } else {
                    out.push_str("(?-u:.)*");
                }
            }
            '*' => {
                out.push_str("(?-u:[^/])*");
                i += 1;
            }
            '?' => {
                out.push_str("(?:[^/]|(?-u:[\\x80-\\xFF]))");
                i += 1;
            }
            '[' => match class(&chars[i..]) {
                Some((re, len)) => {
                    out.push_str(&re);
                    i += len;
                }
                // An unclosed class makes the pattern match nothing, as in rsync.
                None => return "[^\\s\\S]".to_string(),
            },
            c => {
                out.push_str(&regex::escape(&c.to_string()));
                i += 1;
            }
        }
    }
    out
}

/// A character class at the start of `chars` (which begins with `[`):
/// its regex and its length, or `None` when it is not closed.
fn class(chars: &[char]) -> Option<(String, usize)> {
    let mut i = 1;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut items = String::new();
    let mut first = true;
    loop {
        let c = *chars.get(i)?;
        if c == ']' && !first {
            break;
        }
        first = false;
        if c == '[' && chars.get(i + 1) == Some(&':') {
            let rest: String = chars[i + 2..].iter().collect();
            if let Some(end) = rest.find(":]") {
                let name = &rest[..end];
                const NAMES: [&str; 12] = [
                    "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper",
                    "xdigit",
                ];
                if NAMES.contains(&name) {
                    items.push_str(&format!("[:{name}:]"));
                    i += 2 + name.chars().count() + 2;
                    continue;
                }
            }
        }
        let lit = |c: char| if c.is_alphanumeric() { c.to_string() } else { format!("\\{c}") };
        let c = if c == '\\' && i + 1 < chars.len() {
            i += 1;
            chars[i]
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|e| *e != ']') {
            let mut end = chars[i + 2];
            let mut len = 3;
            if end == '\\' && i + 3 < chars.len() {
                end = chars[i + 3];
                len = 4;
            }
            if end >= c {
                items.push_str(&format!("{}-{}", lit(c), lit(end)));
            }
            i += len;
        } else {
            items.push_str(&lit(c));
            i += 1;
        }
    }
    // A class never matches '/'.
    let re = if negated { format!("(?:[^/{items}]|(?-u:[\\x80-\\xFF]))") } else { format!("[[{items}]&&[^/]]") };
    Some((re, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(p: &str, rel: &str) -> bool {
        Pattern::parse(p).unwrap().excludes(rel, false)
    }

    #[test]
    fn names_are_bytes() {
        let ex = |p: &str, rel: &[u8]| Pattern::parse(p).unwrap().excludes(rel, false);
        for (p, rel, want) in [
            ("*.tmp", &b"caf\xe9.tmp"[..], true),
            ("caf?.txt", b"caf\xe9.txt", true),
            ("caf?.txt", b"caf\xc3\xa9.txt", true),
            ("[!a]", b"\xff", true),
            ("[a]", b"\xff", false),
            ("**", b"\xfe/\xff\nx", true),
            ("/top/***", b"top/\x80/f", true),
            ("*.gz", b"\xff.tgz", false),
        ] {
            assert_eq!(ex(p, rel), want, "{p} {}", String::from_utf8_lossy(rel));
        }
    }

    #[test]
    fn table() {
        for (p, rel, want) in [
            ("*.gz", "a.gz", true),
            ("*.gz", "d/a.gz", true),
            ("d/*.gz", "d/a.gz", true),
            ("d/*.gz", "x/d/a.gz", true),
            ("d/*.gz", "xd/a.gz", false),
            ("/d/*.gz", "x/d/a.gz", false),
            ("/d/*.gz", "d/a.gz", true),
            ("d/*", "d/e/f", true),
            ("*", "anything/at/all", true),
            ("**.gz", "d/e/a.gz", true),
            ("a?c", "abc", true),
            ("a?c", "a/c", false),
            ("[ab]x", "bx", true),
            ("[!ab]x", "bx", false),
            ("[!ab]x", "cx", true),
            ("[[:digit:]]*", "7up", true),
            ("private/", "private", false),
            ("private/", "private/x", true),
            ("d/***", "d", true),
            ("d/***", "d/x/y", true),
            ("d/***", "dx", false),
            ("a\\*b", "a*b", true),
            ("a\\*b", "axb", false),
            ("a\\b", "a\\b", true),
            ("[", "[", false),
            ("x[", "x[", false),
            ("**/a.gz", "a.gz", true),
            ("/d/", "x/d/a", false),
        ] {
            assert_eq!(ex(p, rel), want, "{p:?} vs {rel:?}");
        }
        assert!(Pattern::parse("private/").unwrap().excludes("private", true));
        assert!(Pattern::parse("/").is_err());
    }

    #[test]
    fn pathological_pattern_is_linear() {
        let p = Pattern::parse("*a*a*a*a*a*a*a*a*a*a*a*a*b").unwrap();
        let name = "a".repeat(5000);
        assert!(!p.excludes(&name, false));
    }
}
