//! The heartbeat a resolver keeps in `dj_resolvers`: what `dag apply` reads
//! the live resolvers' feature level from (`datajump_shared::features`).

use async_nats::jetstream::Context;
use datajump_nats::{HEARTBEAT_EVERY, ResolverHeartbeat, write_heartbeat};
use datajump_shared::subjects::Namespace;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// Writes this resolver's heartbeat under `id` every [`HEARTBEAT_EVERY`]
/// until `shutdown`, then removes it.
pub(crate) async fn heartbeat_loop(
    js: Context,
    names: Namespace,
    id: String,
    shutdown: CancellationToken,
) {
    let bucket = names.resolvers_bucket();
    let kv = match datajump_nats::key_value(&js, &bucket).await {
        Ok(kv) => kv,
        Err(e) => {
            warn!(error = %e, "no {bucket} bucket: `dag apply` cannot see this resolver's version");
            return;
        }
    };
    while !shutdown.is_cancelled() {
        if let Err(e) = write_heartbeat(&kv, &id, &ResolverHeartbeat::now(&id)).await {
            warn!(error = %e, "heartbeat failed");
        }
        tokio::select! {
            () = tokio::time::sleep(HEARTBEAT_EVERY) => {},
            () = shutdown.cancelled() => {},
        }
    }
    let _ = kv.purge(&id).await;
}
