//! Listing a caller's tasks (`tasks/list`): which tasks a listing shows, in which order, and how
//! a page is cut from candidates that may turn out to be gone.
//!
//! A task is created with an optional listing scope (a key naming its creator). A listing
//! walks one scope's tasks oldest first, by `(created_at, task_id)`; a page ends at a
//! [`ListPosition`] and the next page starts strictly after it, so tasks created while a
//! client pages through appear on a later page and none is shown twice or skipped.

use super::schedule::purge_time;
use super::task::TaskRecord;
use super::time::Timestamp;

/// The most tasks one page holds; a larger limit is lowered to this.
pub const MAX_PAGE_SIZE: usize = 100;

/// Where a task stands in its scope's listing: by creation time, then by id.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct ListPosition {
    /// When the task was created (on the Cloudflare host: when its scope's index recorded it).
    pub created_at: Timestamp,
    /// The task's id, which orders tasks created in the same millisecond.
    pub task_id: String,
}

impl ListPosition {
    /// The position of `task` in its listing.
    pub fn of(task: &TaskRecord) -> Self {
        ListPosition {
            created_at: task.created_at,
            task_id: task.task_id.clone(),
        }
    }
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq)]
pub struct ListPage<T> {
    /// The tasks, oldest first.
    pub items: Vec<T>,
    /// Where the next page starts (strictly after this), or `None` if this page is the last.
    pub next: Option<ListPosition>,
}

impl<T> ListPage<T> {
    /// The same page with each item mapped by `f`.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> ListPage<U> {
        ListPage {
            items: self.items.into_iter().map(f).collect(),
            next: self.next,
        }
    }
}

/// Whether `task` is shown in its scope's listing at `now`: it has a scope and is not past
/// the time it is purged (a stored task whose purge is merely late is not shown).
pub fn is_listed(task: &TaskRecord, now: Timestamp) -> bool {
    let purged = task.status.is_terminal() && purge_time(task).is_some_and(|at| at <= now);
    task.list_scope.is_some() && !purged
}

/// The page size a listing asked for `limit` gets: at least one, at most [`MAX_PAGE_SIZE`].
pub fn page_size(limit: usize) -> usize {
    limit.clamp(1, MAX_PAGE_SIZE)
}

/// Cuts a page from candidates offered in listing order, some of which are not shown (their
/// task is gone, expired, or was never created). It keeps looking one task past the page, so
/// that a page is marked last only when nothing follows it.
#[derive(Debug)]
pub struct PageBuilder<T> {
    limit: usize,
    items: Vec<(ListPosition, T)>,
    /// The last candidate offered, shown or not.
    last_offered: Option<ListPosition>,
    /// A shown task follows the page.
    more: bool,
}

impl<T> PageBuilder<T> {
    /// A builder of a page of [`page_size`]`(limit)` tasks.
    pub fn new(limit: usize) -> Self {
        PageBuilder {
            limit: page_size(limit),
            items: Vec::new(),
            last_offered: None,
            more: false,
        }
    }

    /// How many more candidates to fetch at most: enough to fill the page and see one past it
    /// if every one is shown; zero once the page is complete.
    pub fn wanted(&self) -> usize {
        if self.more {
            0
        } else {
            self.limit + 1 - self.items.len()
        }
    }

    /// Where the next candidates start (strictly after this): the last candidate offered.
    pub fn resume_after(&self) -> Option<&ListPosition> {
        self.last_offered.as_ref()
    }

    /// Offers the next candidate in listing order: `Some(item)` if it is shown, `None` if
    /// not. Candidates offered once the page is complete are ignored.
    pub fn offer(&mut self, position: ListPosition, item: Option<T>) {
        if self.more {
            return;
        }
        if let Some(item) = item {
            if self.items.len() == self.limit {
                self.more = true;
                return;
            }
            self.items.push((position.clone(), item));
        }
        self.last_offered = Some(position);
    }

    /// The page. `exhausted` says whether the candidates offered were all there are; if not
    /// (the caller stopped looking early), the next page resumes after the last candidate, even
    /// if this page is short or empty.
    pub fn finish(self, exhausted: bool) -> ListPage<T> {
        let next = if self.more {
            self.items.last().map(|(position, _)| position.clone())
        } else if exhausted {
            None
        } else {
            self.last_offered
        };
        ListPage {
            items: self.items.into_iter().map(|(_, item)| item).collect(),
            next,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::core::TaskStatus;
    use crate::core::control::test_task;

    fn at(created_at: u64, id: &str) -> ListPosition {
        ListPosition {
            created_at: Timestamp(created_at),
            task_id: id.to_owned(),
        }
    }

    #[test]
    fn positions_order_by_time_then_id() {
        let mut positions = vec![at(20, "a"), at(10, "z"), at(20, "B"), at(10, "y")];
        positions.sort();
        assert_eq!(
            positions,
            [at(10, "y"), at(10, "z"), at(20, "B"), at(20, "a")]
        );
    }

    #[test]
    fn a_full_page_with_a_shown_task_after_it_points_at_its_last_item() {
        let mut page = PageBuilder::new(2);
        assert_eq!(page.wanted(), 3);
        page.offer(at(1, "a"), Some("a"));
        page.offer(at(2, "b"), None);
        page.offer(at(3, "c"), Some("c"));
        assert_eq!(page.wanted(), 1);
        page.offer(at(4, "d"), Some("d"));
        assert_eq!(page.wanted(), 0);
        page.offer(at(5, "e"), Some("e"));
        let page = page.finish(false);
        assert_eq!(page.items, ["a", "c"]);
        assert_eq!(page.next, Some(at(3, "c")));
    }

    #[test]
    fn a_page_that_reaches_the_end_is_the_last() {
        let mut page = PageBuilder::new(2);
        page.offer(at(1, "a"), Some("a"));
        page.offer(at(2, "b"), Some("b"));
        page.offer(at(3, "c"), None);
        let page = page.finish(true);
        assert_eq!((page.items, page.next), (vec!["a", "b"], None));
    }

    #[test]
    fn a_page_cut_short_resumes_after_the_last_candidate_seen() {
        let mut page = PageBuilder::<&str>::new(2);
        page.offer(at(1, "a"), None);
        page.offer(at(2, "b"), None);
        assert_eq!(page.resume_after(), Some(&at(2, "b")));
        let page = page.finish(false);
        assert_eq!((page.items, page.next), (Vec::new(), Some(at(2, "b"))));
    }

    #[test]
    fn page_sizes_are_clamped() {
        assert_eq!(page_size(0), 1);
        assert_eq!(page_size(7), 7);
        assert_eq!(page_size(10_000), MAX_PAGE_SIZE);
        assert_eq!(PageBuilder::<()>::new(0).wanted(), 2);
    }

    #[test]
    fn a_task_is_listed_until_its_purge_time() {
        let mut task = test_task(Timestamp(1_000), Some(Duration::from_secs(10)));
        assert!(
            !is_listed(&task, Timestamp(1_000)),
            "no scope: never listed"
        );
        task.list_scope = Some("principal:ada".into());
        assert!(is_listed(&task, Timestamp(1_000)));
        assert!(
            is_listed(&task, Timestamp(50_000)),
            "a live task past its deadline is shown until it is failed"
        );
        task.transition(TaskStatus::Completed, Timestamp(2_000));
        assert!(is_listed(&task, Timestamp(10_999)));
        assert!(!is_listed(&task, Timestamp(11_000)), "purge time reached");
        task.ttl = None;
        assert!(is_listed(&task, Timestamp(u64::MAX)), "kept forever");
    }
}
