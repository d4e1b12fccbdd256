//! A store that keeps rows in memory: for tests, and as the reference the conformance suite
//! compares other stores with.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, TaskRecord, TaskState, Write,
};
use crate::runtime::{Store, StoreError};

/// An in-memory [`Store`]. Writes apply through [`TaskState::apply`], the same code the
/// engine's own bookkeeping uses.
#[derive(Debug, Default)]
pub struct MemoryStore {
    tasks: Mutex<BTreeMap<String, TaskState>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, TaskState>> {
        // Applying writes cannot panic halfway, so a poisoned lock still guards whole rows.
        self.tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Store for MemoryStore {
    fn create(&self, task: &TaskRecord) -> Result<TaskRecord, StoreError> {
        let mut tasks = self.tasks();
        let state = tasks
            .entry(task.task_id.clone())
            .or_insert_with(|| TaskState {
                task: task.clone(),
                steps: BTreeMap::new(),
                inputs: BTreeMap::new(),
            });
        Ok(state.task.clone())
    }

    fn load(&self, task_id: &str, scope: LoadScope) -> Result<Option<TaskState>, StoreError> {
        Ok(self.tasks().get(task_id).map(|state| state.scoped(scope)))
    }

    fn load_input(&self, task_id: &str, key: &str) -> Result<Option<InputRow>, StoreError> {
        let tasks = self.tasks();
        Ok(tasks.get(task_id).and_then(|s| s.inputs.get(key).cloned()))
    }

    fn apply(&self, task_id: &str, guard: Guard, writes: &[Write]) -> Result<Applied, StoreError> {
        let mut tasks = self.tasks();
        let Some(state) = tasks.get_mut(task_id) else {
            return Ok(Applied::Stale);
        };
        // The guard is checked before anything is applied, and applying cannot fail: all or
        // nothing without a copy.
        Ok(state.apply_guarded(guard, writes))
    }

    fn purge(&self, task_id: &str) -> Result<(), StoreError> {
        self.tasks().remove(task_id);
        Ok(())
    }

    fn task_ids(&self) -> Result<Vec<String>, StoreError> {
        let tasks = self.tasks();
        let mut ids: Vec<_> = tasks
            .values()
            .map(|s| (s.task.created_at, s.task.task_id.clone()))
            .collect();
        ids.sort();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }

    fn list_tasks(
        &self,
        scope: &str,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.listed(after, limit, |task| {
            task.list_scope.as_deref() == Some(scope)
        })
    }

    fn list_every_task(
        &self,
        after: Option<&ListPosition>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        self.listed(after, limit, |_| true)
    }
}

impl MemoryStore {
    /// Up to `limit` of the tasks `shown` picks, in listing order, strictly after `after`.
    fn listed(
        &self,
        after: Option<&ListPosition>,
        limit: usize,
        shown: impl Fn(&TaskRecord) -> bool,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let tasks = self.tasks();
        let mut listed: Vec<(ListPosition, &TaskRecord)> = tasks
            .values()
            .map(|state| &state.task)
            .filter(|task| shown(task))
            .map(|task| (ListPosition::of(task), task))
            .filter(|(position, _)| after.is_none_or(|after| position > after))
            .collect();
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(listed
            .into_iter()
            .take(limit)
            .map(|(_, task)| task.clone())
            .collect())
    }
}
