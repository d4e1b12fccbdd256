//! A store wrapper that lets a test watch the calls to another store, or make them fail.

use std::rc::Rc;

use super::memory::MemoryStore;
use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, TaskRecord, TaskState, Write,
};
use crate::runtime::{Store, StoreError};

/// One call to a [`Store`], with its arguments, as an [`ObservedStore`] shows it to its
/// [`StoreObserver`] before passing it on.
#[derive(Clone, Copy, Debug)]
pub enum StoreCall<'a> {
    /// [`Store::create`].
    Create {
        /// The row to insert.
        task: &'a TaskRecord,
    },
    /// [`Store::load`].
    Load {
        /// The task to read.
        task_id: &'a str,
        /// How much of its journal to read.
        scope: LoadScope,
    },
    /// [`Store::load_input`].
    LoadInput {
        /// The task the input request belongs to.
        task_id: &'a str,
        /// The input request's key.
        key: &'a str,
    },
    /// [`Store::apply`].
    Apply {
        /// The task written to.
        task_id: &'a str,
        /// What the task row must match.
        guard: Guard,
        /// The writes, in order.
        writes: &'a [Write],
    },
    /// [`Store::flush`].
    Flush,
    /// [`Store::purge`].
    Purge {
        /// The task to delete.
        task_id: &'a str,
    },
    /// [`Store::task_ids`].
    TaskIds,
    /// [`Store::list_tasks`].
    ListTasks {
        /// The listing scope.
        scope: &'a str,
        /// The position to list after (`None`: from the first).
        after: Option<&'a ListPosition>,
        /// The most rows to return.
        limit: usize,
    },
}

/// What an [`ObservedStore`] tells about the calls passing through it. Both methods do
/// nothing by default.
pub trait StoreObserver {
    /// Sees each call before the wrapped store does. An error refuses the call: the wrapped
    /// store is not called and the error is returned instead.
    fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        let _ = call;
        Ok(())
    }

    /// Sees the writes of each [`Store::apply`] the wrapped store answered without an error,
    /// and its answer (writes the guard turned away come with [`Applied::Stale`]).
    fn applied(&self, task_id: &str, writes: &[Write], applied: Applied) {
        let _ = (task_id, writes, applied);
    }
}

/// A shared observer, so that a test keeps a handle on it after handing the store away.
impl<O: StoreObserver + ?Sized> StoreObserver for Rc<O> {
    fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        (**self).before(call)
    }

    fn applied(&self, task_id: &str, writes: &[Write], applied: Applied) {
        (**self).applied(task_id, writes, applied);
    }
}

/// A [`Store`] that passes every call on to `S` (by default a [`MemoryStore`]) and shows it
/// to an observer `O` first, which can refuse it. Tests use it to count or log what the
/// engine writes, or to make a store fail.
///
/// ```
/// use std::cell::Cell;
///
/// use durable_mcp::store::{Store, StoreError};
/// use durable_mcp::testing::{MemoryStore, ObservedStore, StoreCall, StoreObserver};
///
/// /// Fails every read while `down` is set.
/// #[derive(Default)]
/// struct Down(Cell<bool>);
///
/// impl StoreObserver for Down {
///     fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
///         match call {
///             StoreCall::Load { .. } if self.0.get() => Err(StoreError("down".to_owned())),
///             _ => Ok(()),
///         }
///     }
/// }
///
/// let store = ObservedStore::new(MemoryStore::new(), Down::default());
/// assert_eq!(store.load("t", durable_mcp::store::LoadScope::Full), Ok(None));
/// store.observer().0.set(true);
/// assert!(store.load("t", durable_mcp::store::LoadScope::Full).is_err());
/// ```
#[derive(Debug, Default)]
pub struct ObservedStore<O, S = MemoryStore> {
    inner: S,
    observer: O,
}

impl<O: StoreObserver, S: Store> ObservedStore<O, S> {
    /// Wraps `inner`, showing its calls to `observer`.
    pub fn new(inner: S, observer: O) -> Self {
        ObservedStore { inner, observer }
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    /// The wrapped store (calls made on it directly are not observed).
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<O: StoreObserver, S: Store> Store for ObservedStore<O, S> {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        self.observer.before(StoreCall::Create { task })?;
        self.inner.create(task)
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        self.observer.before(StoreCall::Load { task_id, scope })?;
        self.inner.load(task_id, scope)
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        self.observer
            .before(StoreCall::LoadInput { task_id, key })?;
        self.inner.load_input(task_id, key)
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        let call = StoreCall::Apply {
            task_id,
            guard,
            writes,
        };
        self.observer.before(call)?;
        let applied = self.inner.apply(task_id, guard, writes)?;
        self.observer.applied(task_id, writes, applied);
        Ok(applied)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.observer.before(StoreCall::Flush)?;
        self.inner.flush()
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        self.observer.before(StoreCall::Purge { task_id })?;
        self.inner.purge(task_id)
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        self.observer.before(StoreCall::TaskIds)?;
        self.inner.task_ids()
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let call = StoreCall::ListTasks {
            scope,
            after,
            limit,
        };
        self.observer.before(call)?;
        self.inner.list_tasks(scope, after, limit)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::core::Timestamp;
    use crate::testing::conformance::task;
    use crate::testing::store_conformance;

    /// Logs every call and outcome; refuses purges.
    #[derive(Default)]
    struct Recorder(RefCell<Vec<String>>);

    impl StoreObserver for Recorder {
        fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
            let entry = match call {
                StoreCall::Create { task } => format!("create {}", task.task_id),
                StoreCall::Load { task_id, .. } => format!("load {task_id}"),
                StoreCall::Apply {
                    task_id,
                    guard,
                    writes,
                } => format!("apply {task_id} {:?} {}", guard.version, writes.len()),
                StoreCall::Purge { task_id } => {
                    self.0.borrow_mut().push(format!("refused purge {task_id}"));
                    return Err(StoreError("no purging".to_owned()));
                }
                other => format!("{other:?}"),
            };
            self.0.borrow_mut().push(entry);
            Ok(())
        }

        fn applied(&self, task_id: &str, writes: &[Write], applied: Applied) {
            let entry = format!("applied {task_id} {} {applied:?}", writes.len());
            self.0.borrow_mut().push(entry);
        }
    }

    /// Observes nothing.
    struct Quiet;

    impl StoreObserver for Quiet {}

    #[test]
    fn an_observed_store_is_still_a_store() {
        store_conformance(|| ObservedStore::new(MemoryStore::new(), Quiet));
    }

    #[test]
    fn the_observer_sees_each_call_first_and_can_refuse_it() {
        let recorder = Rc::new(Recorder::default());
        let store = ObservedStore::new(MemoryStore::new(), Rc::clone(&recorder));
        store.create(&task("t", 1)).unwrap();
        let status = Write::PublishStatus {
            message: "hi".to_owned(),
            meta: None,
            published: 1,
            at: Timestamp(2),
        };
        let stale = Guard {
            version: Some(7),
            generation: None,
        };
        assert_eq!(
            store.apply("t", stale, std::slice::from_ref(&status)),
            Ok(Applied::Stale)
        );
        assert_eq!(
            store.apply("t", Guard::default(), &[status]),
            Ok(Applied::Done {
                cancel_requested: false
            })
        );
        assert_eq!(store.purge("t"), Err(StoreError("no purging".to_owned())));
        let state = store
            .load("t", LoadScope::Full)
            .unwrap()
            .expect("not purged");
        assert_eq!(state.task.status_message.as_deref(), Some("hi"));
        store.flush().unwrap();
        assert_eq!(
            recorder.0.borrow().as_slice(),
            [
                "create t",
                "apply t Some(7) 1",
                "applied t 1 Stale",
                "apply t None 1",
                "applied t 1 Done { cancel_requested: false }",
                "refused purge t",
                "load t",
                "Flush",
            ]
        );
        assert_eq!(store.inner().task_ids().unwrap(), ["t"]);
        assert_eq!(
            recorder.0.borrow().len(),
            8,
            "calls on the inner store go unseen"
        );
    }
}
