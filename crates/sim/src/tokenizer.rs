//! A token-count approximation for prompts, and the text the simulator streams back.
//!
//! The simulator needs prompt lengths, not token ids. [`count_tokens`] approximates BPE tokenizers
//! of current LLMs: an ASCII word costs about one token per 4 characters, each Hangul syllable or
//! CJK ideograph about one token, punctuation one token, and whitespace joins the next word. The
//! reference prompt (`"쿠버네티스 스케줄러가 Pod를 배치하는 과정을 자세히 설명해줘."`) counts 27,
//! close to the ~30 the real Qwen tokenizer gives.

/// Approximate number of tokens in `text`.
pub fn count_tokens(text: &str) -> u32 {
    let mut tokens = 0u32;
    scan(text, |step| {
        if let Step::Tokens(n) = step {
            tokens += n;
        }
    });
    tokens
}

/// What [`scan`] sees: a character, or a run of tokens completed.
enum Step {
    Char(char),
    Tokens(u32),
}

/// Walks `text` as [`count_tokens`] counts it: every character, and each run of tokens as it
/// completes (a word's when it ends, a sign's at once).
fn scan(text: &str, mut step: impl FnMut(Step)) {
    let mut word_len = 0u32;
    for c in text.chars() {
        step(Step::Char(c));
        if c.is_ascii_alphanumeric() {
            word_len += 1;
            continue;
        }
        step(Step::Tokens(word_len.div_ceil(4)));
        word_len = 0;
        // Hangul, CJK, punctuation, emoji: about one token each; whitespace joins the next word.
        if !c.is_whitespace() {
            step(Step::Tokens(1));
        }
    }
    step(Step::Tokens(word_len.div_ceil(4)));
}

/// The running hash of a prompt's text, taken at each KV block boundary: what vLLM's prefix
/// cache keys a full block by (the tokens up to its end), so prompts that share a prefix share
/// those blocks' keys. Tokens are counted as [`count_tokens`] counts them, from `at` (the tokens
/// before `text`: the chat template, earlier messages); `hasher` carries on across messages.
pub struct BlockHashes {
    pub hasher: std::collections::hash_map::DefaultHasher,
    pub at: u32,
    pub block_size: u32,
    pub keys: Vec<u64>,
}

impl BlockHashes {
    pub fn new(at: u32, block_size: u32) -> Self {
        BlockHashes {
            hasher: std::collections::hash_map::DefaultHasher::new(),
            at,
            block_size: block_size.max(1),
            keys: Vec::new(),
        }
    }

    /// Adds `n` tokens of text already fed to the hasher, keying every block they complete.
    pub fn advance(&mut self, n: u32) {
        use std::hash::Hasher;
        self.at += n;
        while (self.keys.len() as u32 + 1) * self.block_size <= self.at {
            self.keys.push(self.hasher.finish());
        }
    }

    /// Feeds `text`, as [`count_tokens`] reads it.
    pub fn feed(&mut self, text: &str) {
        use std::hash::Hash;
        scan(text, |step| match step {
            Step::Char(c) => c.hash(&mut self.hasher),
            Step::Tokens(n) => self.advance(n),
        });
    }
}

/// The pieces the simulator streams as generated text, one per token.
const PIECES: &[&str] = &[
    " The",
    " scheduler",
    " filters",
    " nodes",
    ",",
    " then",
    " scores",
    " them",
    " and",
    " binds",
    " the",
    " Pod",
    " to",
    " the",
    " best",
    " node",
    ".",
    " Each",
    " plugin",
    " runs",
    " in",
    " order",
    ":",
    " queue",
    " sort",
    ",",
    " pre",
    "filter",
    ",",
    " filter",
    ",",
    " score",
    ".",
    "\n",
];

/// The text of generated token number `i` of a request (deterministic, varied, valid UTF-8).
pub fn piece(request_seed: u64, i: u32) -> &'static str {
    let idx = (request_seed.wrapping_add(i as u64 * 0x9E37_79B9)) % PIECES.len() as u64;
    PIECES[idx as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_prefixes_share_block_keys_and_counts_agree() {
        let a = "alpha beta gamma delta ".repeat(40) + &"one two three ".repeat(10);
        let b = "alpha beta gamma delta ".repeat(40) + &"four five six seven ".repeat(10);
        let keys = |t: &str| {
            let mut h = BlockHashes::new(0, 16);
            h.feed(t);
            (h.keys, h.at)
        };
        let ((ka, na), (kb, nb)) = (keys(&a), keys(&b));
        assert_eq!((na, nb), (count_tokens(&a), count_tokens(&b)));
        assert_eq!(ka.len(), na as usize / 16);
        // 40 × 7 tokens of shared text: the 17 blocks within it are the same, the last differs.
        assert_eq!(ka[..17], kb[..17]);
        assert_ne!(ka.last(), kb.last());
    }

    #[test]
    fn reference_prompt_is_about_thirty_tokens() {
        let n = count_tokens("쿠버네티스 스케줄러가 Pod를 배치하는 과정을 자세히 설명해줘.");
        assert!((25..=35).contains(&n), "{n}");
    }

    #[test]
    fn english_is_about_four_chars_per_token() {
        let text = "The quick brown fox jumps over the lazy dog and keeps running far away";
        let n = count_tokens(text);
        assert!((14..=24).contains(&n), "{n}");
        assert_eq!(count_tokens(""), 0);
    }

    #[test]
    fn pieces_are_deterministic() {
        assert_eq!(piece(5, 3), piece(5, 3));
    }
}
