//! `tasks/list` on Workers: a scope's TaskIndex gives the ids in order, and each task's own
//! object says whether (and how) its task is shown.
//!
//! The index is written before a task is created and told when a task is purged, but it can
//! hold ids whose task is gone (a creation that failed after the id was recorded, a purge
//! whose notice was lost). A listing asks every candidate's object in parallel, drops the
//! ones that are gone, and tells the index to forget them.

use futures_util::future::join_all;

use super::client::ObjectClient;
use super::protocol::{IndexCall, IndexReply, ObjectCall, ObjectReply};
use crate::core::TaskSnapshot;
use crate::core::listing::{ListPage, ListPosition, PageBuilder};
use crate::rpc::RpcError;

/// How many batches of candidates one page looks at before it ends short, with a cursor to go
/// on from: each batch is a round trip to the index and one to each candidate's object.
const MAX_BATCHES: usize = 3;

/// Records `task_id` in the index of `scope`, before the task is created.
pub(crate) async fn register(
    index: &ObjectClient,
    scope: &str,
    task_id: &str,
) -> Result<(), RpcError> {
    let call = IndexCall::Add {
        task_id: task_id.to_owned(),
    };
    index.call::<_, IndexReply>(scope, &call).await?.into_done()
}

/// Tells the index of `scope` that `task_ids` are gone.
pub(crate) async fn forget(
    index: &ObjectClient,
    scope: &str,
    task_ids: Vec<String>,
) -> Result<(), RpcError> {
    let call = IndexCall::Remove { task_ids };
    index.call::<_, IndexReply>(scope, &call).await?.into_done()
}

/// One page of the listing of `scope`, strictly after `after`, of at most `limit` tasks.
pub(crate) async fn page(
    index: &ObjectClient,
    runners: &ObjectClient,
    scope: &str,
    after: Option<ListPosition>,
    limit: usize,
) -> Result<ListPage<TaskSnapshot>, RpcError> {
    let mut page = PageBuilder::new(limit);
    let mut after = after;
    for _ in 0..MAX_BATCHES {
        let wanted = page.wanted();
        let call = IndexCall::Page {
            after: after.clone(),
            limit: wanted,
        };
        let entries = index
            .call::<_, IndexReply>(scope, &call)
            .await?
            .into_entries()?;
        let exhausted = entries.len() < wanted;
        let shown = join_all(entries.iter().map(|entry| listed(runners, scope, entry))).await;
        let mut gone = Vec::new();
        for (entry, snapshot) in entries.into_iter().zip(shown) {
            let snapshot = snapshot?;
            if snapshot.is_none() {
                gone.push(entry.task_id.clone());
            }
            page.offer(entry, snapshot);
        }
        if !gone.is_empty() {
            // Best effort: an id left behind is dropped again by the next listing.
            if let Err(error) = forget(index, scope, gone).await {
                tracing::error!(
                    target: crate::core::trace::TARGET,
                    "forgetting gone tasks: {}",
                    error.error.message
                );
            }
        }
        if exhausted || page.wanted() == 0 {
            return Ok(page.finish(exhausted));
        }
        after = page.resume_after().cloned();
    }
    Ok(page.finish(false))
}

/// The snapshot of the task at `entry` if it is shown in the listing of `scope`.
async fn listed(
    runners: &ObjectClient,
    scope: &str,
    entry: &ListPosition,
) -> Result<Option<TaskSnapshot>, RpcError> {
    let call = ObjectCall::Listed {
        task_id: entry.task_id.clone(),
        scope: scope.to_owned(),
    };
    runners
        .call::<_, ObjectReply>(&entry.task_id, &call)
        .await?
        .into_listed()
}
