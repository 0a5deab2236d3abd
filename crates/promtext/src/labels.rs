//! Label sets of a sample or exemplar, stored as the validated text between the braces.
//!
//! [`Labels`] is two words: the raw `a="1",b="2"` slice of the input and the pair count. The
//! parser validated that text once (names, escapes, duplicates), so iterating it again with
//! [`Labels::iter`] is cheap and infallible and a sample costs no allocation however many labels it
//! has. Each item is a [`Label`] of two [`Escaped`] strings.

use crate::lex::Lexer;
use crate::text::Escaped;

/// The labels of one sample, in the order they were written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Labels<'a> {
    raw: &'a str,
    len: usize,
}

/// One `name="value"` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label<'a> {
    pub name: Escaped<'a>,
    pub value: Escaped<'a>,
}

impl<'a> Labels<'a> {
    /// Labels over `raw`, which must be label-pair text the parser already validated.
    pub(crate) fn new(raw: &'a str, len: usize) -> Self {
        Labels { raw, len }
    }

    /// No labels.
    pub fn empty() -> Self {
        Labels { raw: "", len: 0 }
    }

    /// The pair text as written (without braces and without a quoted metric name).
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> LabelIter<'a> {
        LabelIter {
            lexer: Lexer::new(self.raw),
        }
    }

    /// The value of the label called `name` (compared after unescaping).
    pub fn get(&self, name: &str) -> Option<Escaped<'a>> {
        self.iter().find(|l| l.name == name).map(|l| l.value)
    }
}

impl Default for Labels<'_> {
    fn default() -> Self {
        Labels::empty()
    }
}

impl std::fmt::Debug for Labels<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|l| (l.name, l.value)))
            .finish()
    }
}

impl<'a> IntoIterator for Labels<'a> {
    type Item = Label<'a>;
    type IntoIter = LabelIter<'a>;

    fn into_iter(self) -> LabelIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &Labels<'a> {
    type Item = Label<'a>;
    type IntoIter = LabelIter<'a>;

    fn into_iter(self) -> LabelIter<'a> {
        self.iter()
    }
}

/// Iterator over [`Labels`].
#[derive(Debug, Clone)]
pub struct LabelIter<'a> {
    lexer: Lexer<'a>,
}

impl<'a> Iterator for LabelIter<'a> {
    type Item = Label<'a>;

    fn next(&mut self) -> Option<Label<'a>> {
        if !self.lexer.next_pair_start() {
            return None;
        }
        // A quoted metric name written between the pairs (`{a="1","my.metric"}`) is no pair.
        if let Ok(Some(_)) = self.lexer.name_in_braces() {
            return self.next();
        }
        match self.lexer.label_pair() {
            Ok((name, value)) => Some(Label { name, value }),
            Err(_) => {
                // Unreachable for parser-built labels; stop rather than loop.
                self.lexer = Lexer::new("");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterates_pairs_with_trailing_comma_and_blanks() {
        let l = Labels::new(r#"a="1", "b.c"="x\"y" ,"#, 2);
        let pairs: Vec<(String, String)> = l
            .iter()
            .map(|p| (p.name.to_string(), p.value.to_string()))
            .collect();
        assert_eq!(
            pairs,
            [("a".into(), "1".into()), ("b.c".into(), "x\"y".into())]
        );
        assert_eq!(l.get("b.c").unwrap().raw(), r#"x\"y"#);
        assert!(l.get("zz").is_none());
    }

    #[test]
    fn invalid_text_ends_iteration() {
        assert_eq!(Labels::new("a=1", 1).iter().count(), 0);
        assert!(Labels::empty().is_empty());
        assert_eq!(format!("{:?}", Labels::new(r#"k="v""#, 1)), r#"{"k": "v"}"#);
    }
}
