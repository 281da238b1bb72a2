//! What the shell's benchmarks share: the fixture server and percentiles.

use std::path::Path;

use axum::Router;
use tower_http::services::ServeDir;

/// The `p` quantile (0–1) of `samples`, nearest rank.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index]
}

/// Serves `fixtures/` on 127.0.0.1; returns the base URL.
pub async fn serve_fixtures() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, Router::new().fallback_service(ServeDir::new(dir))).await
    });
    base
}
