//! Task definitions and the registry the engine looks bodies up in.

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;

use super::context::TaskContext;
use super::error::TaskError;
use super::ports::LocalBoxFuture;
use crate::core::RetryPolicy;

/// A task body: takes the context and the JSON input, returns the tool result as JSON.
pub type TaskHandler =
    dyn for<'a> Fn(&'a TaskContext, Value) -> LocalBoxFuture<'a, Result<Value, TaskError>>;

/// The options a task is created and run with.
///
/// More options may come in a minor release: start from [`TaskOptions::default`] and set the
/// fields to change on it (or use the setters of [`TaskDefinition`]).
///
/// ```
/// use std::time::Duration;
/// use durable_mcp::TaskOptions;
///
/// let mut options = TaskOptions::default();
/// options.ttl = None;
/// options.poll_interval = Duration::from_secs(2);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Retention from creation; `None` keeps tasks forever. Default 24 hours.
    pub ttl: Option<Duration>,
    /// The poll interval suggested to clients. Default 5 seconds.
    pub poll_interval: Duration,
    /// The retry policy of every step, unless the step sets its own.
    pub retry: RetryPolicy,
    /// How long one step attempt may take, unless the step sets its own. Default 5 minutes.
    pub step_timeout: Duration,
    /// How long the compensations registered with
    /// [`TaskContext::on_cancel`](crate::TaskContext::on_cancel) may take, retries included,
    /// once a cancellation stopped the body; the task is cancelled when they are done or when
    /// this is over. Default 5 minutes.
    pub cleanup_timeout: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            ttl: Some(Duration::from_secs(24 * 3600)),
            poll_interval: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            step_timeout: Duration::from_secs(300),
            cleanup_timeout: Duration::from_secs(300),
        }
    }
}

/// A named task: its body and its options.
#[derive(Clone)]
pub struct TaskDefinition {
    name: String,
    options: TaskOptions,
    handler: Rc<TaskHandler>,
}

impl fmt::Debug for TaskDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskDefinition")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TaskDefinition {
    /// A task named `name` whose body is `handler`, with default options.
    ///
    /// The handler is usually `|cx, input| Box::pin(body(cx, input))` around an `async fn`.
    pub fn new(
        name: impl Into<String>,
        handler: impl for<'a> Fn(&'a TaskContext, Value) -> LocalBoxFuture<'a, Result<Value, TaskError>>
        + 'static,
    ) -> Self {
        TaskDefinition {
            name: name.into(),
            options: TaskOptions::default(),
            handler: Rc::new(handler),
        }
    }

    /// Replaces all options.
    #[must_use]
    pub fn options(mut self, options: TaskOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the retention (`None`: forever).
    #[must_use]
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.options.ttl = ttl;
        self
    }

    /// Sets the suggested poll interval.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.options.poll_interval = interval;
        self
    }

    /// Sets the default retry policy of the task's steps.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.options.retry = policy;
        self
    }

    /// Sets the default per-attempt timeout of the task's steps.
    #[must_use]
    pub fn step_timeout(mut self, timeout: Duration) -> Self {
        self.options.step_timeout = timeout;
        self
    }

    /// Sets how long the compensations may take after a cancel (see
    /// [`TaskOptions::cleanup_timeout`]).
    #[must_use]
    pub fn cleanup_timeout(mut self, timeout: Duration) -> Self {
        self.options.cleanup_timeout = timeout;
        self
    }

    /// The task's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The task's options.
    pub fn task_options(&self) -> &TaskOptions {
        &self.options
    }

    pub(crate) fn handler(&self) -> &TaskHandler {
        &*self.handler
    }
}

/// The registered tasks, by name.
#[derive(Clone, Debug, Default)]
pub struct TaskRegistry {
    tasks: HashMap<String, TaskDefinition>,
    code_version: Option<String>,
}

impl TaskRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        TaskRegistry::default()
    }

    /// Adds a task.
    ///
    /// # Panics
    ///
    /// If a task with the same name is registered already: two bodies under one name would
    /// make every stored task of that name ambiguous.
    #[must_use]
    pub fn register(mut self, definition: TaskDefinition) -> Self {
        let name = definition.name.clone();
        assert!(
            !self.tasks.contains_key(&name),
            "task {name:?} is registered twice; give each task its own name"
        );
        self.tasks.insert(name, definition);
        self
    }

    /// Records `version` as the code version of every task created from now on (shown by
    /// `tasks/get`); [`McpServer`](crate::McpServer) sets it from its own.
    #[must_use]
    pub fn code_version(mut self, version: impl Into<String>) -> Self {
        self.code_version = Some(version.into());
        self
    }

    /// The code version tasks are created under, if one is set
    /// ([`code_version`](Self::code_version)).
    pub fn version(&self) -> Option<&str> {
        self.code_version.as_deref()
    }

    /// The task named `name`.
    pub fn get(&self, name: &str) -> Option<&TaskDefinition> {
        self.tasks.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.tasks.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}
