//! Rebuilds the crate when the front end's build output changes, and says
//! so when there is none: the binary then serves a page telling how to
//! build the UI instead of the UI.

use std::path::Path;

fn main() {
    let dist = Path::new("../web/dist");
    if dist.join("index.html").is_file() {
        println!("cargo:rerun-if-changed=../web/dist");
    } else {
        // `web/` gains `dist/` when the front end is built; watching the
        // folder (not the missing file, which cargo would treat as always
        // changed) picks that up without rebuilding on every build.
        println!("cargo:rerun-if-changed=../web");
        println!(
            "cargo:warning=the web UI is not built (no web/dist): this binary serves a page saying how to build it; run `npm --prefix web ci && npm --prefix web run build` first to embed it"
        );
    }
}
