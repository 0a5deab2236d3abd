//! Every input reader of `llmscope check` (dashboard JSON, rule YAML, .promql) and the rules
//! after it, on arbitrary text: findings or errors, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llmscope_check::Inventories;
use llmscope_check::inventory::engine::CatalogInventory;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut inv = Inventories::new();
    inv.push(Box::new(CatalogInventory::new("vllm@0.26".parse().expect("spec"))));
    inv.set_scrape_interval(15.0);
    for file in ["f.json", "f.yaml", "f.promql"] {
        let source = llmscope_check::input::read(file, text);
        let _ = llmscope_check::input::check(&source.queries, &inv);
    }
});
