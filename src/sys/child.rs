//! Child processes: how rrr shows a command line to people
//! ([`shell_quote`]).

/// `s` as one shell word: unchanged if it holds only characters no shell
/// treats specially, else in single quotes (a `'` becomes `'\''`).
pub(crate) fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("/srv/CPAN/RECENT-1h.yaml.lock"), "/srv/CPAN/RECENT-1h.yaml.lock");
        assert_eq!(shell_quote("--files-from=x"), "--files-from=x");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's $HOME"), r"'it'\''s $HOME'");
    }
}
