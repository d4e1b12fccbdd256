//! `tasks/list` on Workers: a scope's TaskIndex gives the ids in order, and each task's own
//! object says whether (and how) its task is shown.
//!
//! The index is written before a task is created and told when a task is purged, but it can
//! hold ids whose task is gone (a creation that failed after the id was recorded, a purge
//! whose notice was lost). A listing asks every candidate's object in parallel, drops the
//! ones that are gone, and tells the index to forget them.

use std::future::Future;

use futures_util::future::join_all;

use super::client::ObjectClient;
#[cfg(feature = "inspector")]
use super::protocol::InspectCall;
use super::protocol::{Candidate, IndexCall, IndexReply, ListedCall, ObjectCall, ObjectReply};
use crate::core::TaskSnapshot;
use crate::core::listing::{ListPage, ListPosition, PageBuilder};
#[cfg(feature = "inspector")]
use crate::inspector::TaskFilter;
use crate::runtime::RouteError;

/// The index scope that holds every task's id, whatever its own scope, while the inspector is
/// on: what the inspector lists. (Task scopes start with `principal:` or `session:`.)
#[cfg(feature = "inspector")]
pub(crate) const EVERY_TASK_SCOPE: &str = "$inspector";

/// How many batches of candidates one page looks at before it ends short, with a cursor to go
/// on from: each batch is a round trip to the index and one to each candidate's object.
const MAX_BATCHES: usize = 3;

/// Records `task_id` in the index of `scope`, before the task is created.
pub(crate) async fn register(
    index: &ObjectClient,
    scope: &str,
    task_id: &str,
) -> Result<(), RouteError> {
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
) -> Result<(), RouteError> {
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
) -> Result<ListPage<TaskSnapshot>, RouteError> {
    page_of(index, scope, after, limit, |entry| {
        listed(runners, scope, entry)
    })
    .await
}

/// One page of what `candidate` shows of the tasks the index of `scope` holds, strictly after
/// `after`, of at most `limit` items. Ids whose task is gone are forgotten.
pub(crate) async fn page_of<T, F, Fut>(
    index: &ObjectClient,
    scope: &str,
    after: Option<ListPosition>,
    limit: usize,
    candidate: F,
) -> Result<ListPage<T>, RouteError>
where
    F: Fn(ListPosition) -> Fut,
    Fut: Future<Output = Result<Candidate<T>, RouteError>>,
{
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
        let shown = join_all(entries.iter().cloned().map(&candidate)).await;
        let mut gone = Vec::new();
        for (entry, shown) in entries.into_iter().zip(shown) {
            let item = match shown? {
                Candidate::Shown(item) => Some(item),
                Candidate::Skipped => None,
                Candidate::Gone => {
                    gone.push(entry.task_id.clone());
                    None
                }
            };
            page.offer(entry, item);
        }
        if !gone.is_empty() {
            // Best effort: an id left behind is dropped again by the next listing.
            if let Err(error) = forget(index, scope, gone).await {
                tracing::error!(
                    target: crate::core::trace::TARGET,
                    "forgetting gone tasks: {}",
                    error
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

/// The snapshot of the task at `entry` if it is shown in the listing of `scope`; a task not
/// shown there is gone from it.
async fn listed(
    runners: &ObjectClient,
    scope: &str,
    entry: ListPosition,
) -> Result<Candidate<TaskSnapshot>, RouteError> {
    let call = ObjectCall::Listed(ListedCall {
        task_id: entry.task_id.clone(),
        scope: scope.to_owned(),
    });
    let listed = runners
        .call::<_, ObjectReply>(&entry.task_id, &call)
        .await?
        .into_listed()?;
    Ok(listed.map_or(Candidate::Gone, Candidate::Shown))
}

/// What the inspector's listing shows of the task at `entry`: its summary if `filter` keeps
/// it.
#[cfg(feature = "inspector")]
pub(crate) async fn inspected(
    runners: &ObjectClient,
    filter: &TaskFilter,
    entry: ListPosition,
) -> Result<Candidate, RouteError> {
    let call = ObjectCall::Inspect(InspectCall {
        task_id: entry.task_id.clone(),
        whole: false,
        filter: Some(filter.clone()),
    });
    runners
        .call::<_, ObjectReply>(&entry.task_id, &call)
        .await?
        .into_view()
}
