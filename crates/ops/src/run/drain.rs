//! After the load: the server is polled until it is idle, so the run sees the fall.

use super::{Narrator, RunPlan};
use llmscope_catalog as catalog;
use llmscope_collect::HttpClient;
use llmscope_core::duration::format_duration;
use llmscope_diagnosis::Concept;
use std::time::Duration;

/// Polls the engine's metrics until nothing runs or waits and no token was generated since the
/// poll before (or the drain timeout).
pub(super) async fn drain(client: &HttpClient, plan: &RunPlan, n: &dyn Narrator) {
    let Some(engine) = plan.scrape.first() else {
        return;
    };
    let deadline = tokio::time::Instant::now() + plan.drain_timeout;
    let mut idle = Idle::default();
    while tokio::time::Instant::now() < deadline {
        let read = read_engine(client, &engine.uri).await;
        if read.is_some_and(|(busy, tokens)| idle.again(busy, tokens)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    n.warn(&format!(
        "the server was still busy after --drain-timeout {}",
        format_duration(plan.drain_timeout)
    ));
}

/// Idle twice in a row with no token generated in between: a real vLLM 0.32 reads 0 running
/// and 0 waiting in many scrapes while it still works (issue 22).
#[derive(Default)]
struct Idle {
    /// The tokens generated when the last poll found nothing running or waiting.
    at: Option<f64>,
}

impl Idle {
    /// Takes a poll (requests running or waiting, tokens generated); `true` when idle again.
    fn again(&mut self, busy: f64, tokens: f64) -> bool {
        if busy != 0.0 {
            self.at = None;
            return false;
        }
        self.at.replace(tokens) == Some(tokens)
    }
}

/// Requests running or waiting, and tokens generated so far, from the engine's page.
async fn read_engine(client: &HttpClient, uri: &hyper::Uri) -> Option<(f64, f64)> {
    let headers = hyper::HeaderMap::new();
    let get = llmscope_collect::http::Get {
        uri: uri.clone(),
        headers: &headers,
        timeout: Duration::from_secs(5),
        body_limit: 16 << 20,
    };
    let page = client.get(get).await.ok()?;
    let (families, _) = promtext::parse_families(&page.body);
    let busy = sum(&families, &[Concept::Running, Concept::Waiting]);
    Some((busy, sum(&families, &[Concept::GeneratedTokens])))
}

/// The sum of every sample of the families that are one of `concepts`.
fn sum(families: &[promtext::Family<'_>], concepts: &[Concept]) -> f64 {
    families
        .iter()
        .filter(|f| catalog::lookup(f.name.raw()).is_some_and(|d| concepts.contains(&d.concept)))
        .flat_map(|f| f.samples.iter().map(|s| s.value))
        .sum()
}
