//! The internal protocol between the Worker and its Durable Objects (a task's TaskRunner, a
//! scope's TaskIndex): one JSON call per Durable Object RPC call (see [`super::object_rpc`]),
//! one JSON reply. Every call is idempotent, so the Worker may send it again.

use std::future::Future;

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use worker::wasm_bindgen::JsValue;
use worker::{Request, Response};

#[cfg(task_listing)]
use crate::core::ListPosition;
#[cfg(feature = "inspector")]
use crate::core::control::Operation;
use crate::core::{ChildOutcome, ParentLink, TaskSnapshot};
#[cfg(feature = "inspector")]
use crate::inspector::TaskFilter;
use crate::runtime::RouteError;

/// What the Worker asks a task's object. On the wire, an object with the call's fields and
/// `op`, its name in snake case (`{"op":"get","task_id":..,"caller":..}`).
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum ObjectCall {
    /// Create the task (again: the same id and tool return the existing task).
    Create(CreateCall),
    /// `tasks/get`.
    Get(CallerCall),
    /// `tasks/update`.
    Update(UpdateCall),
    /// `tasks/cancel`.
    Cancel(CallerCall),
    /// A child task of this one, started under `key`, ended with `outcome` (sent by the
    /// child's object).
    ChildEnded(ChildEndedCall),
    /// Run the alarm handler now, as if the alarm had fired (an operator's wake-up).
    #[cfg(feature = "inspector")]
    Wake(WakeCall),
    /// The task's snapshot for a listing of `scope`, if the task is shown there (a page of
    /// `tasks/list`): [`ObjectReply::Snapshot`], or [`ObjectReply::Gone`].
    #[cfg(task_listing)]
    Listed(ListedCall),
    /// The task for the inspector: with `whole`, all of it ([`ObjectReply::View`] of the
    /// inspector's detail); else its summary if `filter` keeps it ([`ObjectReply::View`]) or
    /// [`ObjectReply::Skipped`]. [`ObjectReply::Gone`] if there is no such task.
    #[cfg(feature = "inspector")]
    Inspect(InspectCall),
    /// An operator's action from the inspector.
    #[cfg(feature = "inspector")]
    Operate(OperateCall),
}

/// [`ObjectCall::Create`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CreateCall {
    pub(crate) task_id: String,
    pub(crate) tool_name: String,
    pub(crate) input: Value,
    pub(crate) principal: Option<String>,
    /// The listing the task appears in (absent from a Worker of an earlier version).
    #[serde(default)]
    pub(crate) list_scope: Option<String>,
    /// The task that starts it as its child (absent from a Worker of an earlier version).
    #[serde(default)]
    pub(crate) parent: Option<ParentLink>,
}

/// [`ObjectCall::Get`] and [`ObjectCall::Cancel`]: the task, and who asks.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CallerCall {
    pub(crate) task_id: String,
    pub(crate) caller: Option<String>,
}

/// [`ObjectCall::Update`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct UpdateCall {
    pub(crate) task_id: String,
    pub(crate) responses: Value,
    pub(crate) caller: Option<String>,
}

/// [`ObjectCall::ChildEnded`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ChildEndedCall {
    pub(crate) task_id: String,
    pub(crate) key: String,
    pub(crate) outcome: ChildOutcome,
}

/// [`ObjectCall::Wake`].
#[cfg(feature = "inspector")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WakeCall {
    pub(crate) task_id: String,
}

/// [`ObjectCall::Listed`].
#[cfg(task_listing)]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ListedCall {
    pub(crate) task_id: String,
    pub(crate) scope: String,
}

/// [`ObjectCall::Inspect`].
#[cfg(feature = "inspector")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct InspectCall {
    pub(crate) task_id: String,
    pub(crate) whole: bool,
    pub(crate) filter: Option<TaskFilter>,
}

/// [`ObjectCall::Operate`].
#[cfg(feature = "inspector")]
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct OperateCall {
    pub(crate) task_id: String,
    pub(crate) operation: Operation,
}

/// The ops this build answers, as the wire names them.
const OPS: &[&str] = &[
    "create",
    "get",
    "update",
    "cancel",
    "child_ended",
    #[cfg(feature = "inspector")]
    "wake",
    #[cfg(task_listing)]
    "listed",
    #[cfg(feature = "inspector")]
    "inspect",
    #[cfg(feature = "inspector")]
    "operate",
];

/// Read in two steps, the object and then the fields of its `op`, where serde's derive for an
/// internally tagged enum makes one function of every variant's decoding: each op's decoding
/// stays a function of its own, compiled in a Worker when a call of that op first comes (see
/// `apart`).
impl<'de> Deserialize<'de> for ObjectCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = Map::<String, Value>::deserialize(deserializer)?;
        let op = match fields.remove("op") {
            Some(Value::String(op)) => op,
            Some(other) => {
                return Err(de::Error::custom(format!("op is {other}, not a name")));
            }
            None => return Err(de::Error::missing_field("op")),
        };
        let fields = Value::Object(fields);
        Ok(match op.as_str() {
            "create" => ObjectCall::Create(fields_of(fields)?),
            "get" => ObjectCall::Get(fields_of(fields)?),
            "update" => ObjectCall::Update(fields_of(fields)?),
            "cancel" => ObjectCall::Cancel(fields_of(fields)?),
            "child_ended" => ObjectCall::ChildEnded(fields_of(fields)?),
            #[cfg(feature = "inspector")]
            "wake" => ObjectCall::Wake(fields_of(fields)?),
            #[cfg(task_listing)]
            "listed" => ObjectCall::Listed(fields_of(fields)?),
            #[cfg(feature = "inspector")]
            "inspect" => ObjectCall::Inspect(fields_of(fields)?),
            #[cfg(feature = "inspector")]
            "operate" => ObjectCall::Operate(fields_of(fields)?),
            other => return Err(de::Error::unknown_variant(other, OPS)),
        })
    }
}

/// One op's fields. Never inlined: each op's decoding stays a function of its own.
#[inline(never)]
fn fields_of<T: DeserializeOwned, E: de::Error>(fields: Value) -> Result<T, E> {
    T::deserialize(fields).map_err(E::custom)
}

/// What the object answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ObjectReply {
    /// The task as the caller may see it.
    Snapshot(TaskSnapshot),
    /// The change was recorded (or was already).
    Done,
    /// The task is not shown in the listing asked about: it does not exist (any more), was
    /// created in another scope, or is past its purge time.
    Gone,
    /// The operation did not happen, and why.
    Refused(Refusal),
    /// The inspector's view of the task.
    View(Value),
    /// The task exists, and the inspector's filter leaves it out.
    Skipped,
}

/// What the Worker asks a scope's TaskIndex, the object that lists the scope's task ids.
#[cfg(task_listing)]
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum IndexCall {
    /// Record the id, positioned at the index's current time (again: the first position stays).
    Add { task_id: String },
    /// Up to `limit` entries strictly after `after` (from the first when `None`), in order.
    Page {
        after: Option<ListPosition>,
        limit: usize,
    },
    /// Forget these ids (their tasks are gone).
    Remove { task_ids: Vec<String> },
}

/// What a TaskIndex answers.
#[cfg(task_listing)]
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IndexReply {
    /// The entries of a page, in order.
    Entries(Vec<ListPosition>),
    /// The change was recorded (or was already).
    Done,
}

/// Answers one call, given as JSON text, with the JSON text of `answer`'s reply. A text that
/// is no call is refused with a JavaScript error (only the Worker calls these objects), as is
/// a call `answer` fails.
pub(crate) async fn answer_text<C, R, F>(
    text: &str,
    answer: impl FnOnce(C) -> F,
) -> Result<String, JsValue>
where
    C: DeserializeOwned,
    R: Serialize,
    F: Future<Output = Result<R, JsValue>>,
{
    let call = serde_json::from_str(text).map_err(|error| {
        js_error(&format!(
            "not an internal call ({error}); only the Worker calls this object"
        ))
    })?;
    serde_json::to_string(&answer(call).await?)
        .map_err(|error| js_error(&format!("encoding a reply: {error}")))
}

/// The answer to a `fetch` sent to a durable-mcp object (`class` names it): 404, since the
/// Worker reaches its objects only through Durable Object RPC.
pub(crate) fn refuse_fetch(request: &Request, class: &str) -> worker::Result<Response> {
    let message = format!(
        "{class} objects answer only the Worker's Durable Object RPC calls, not fetch \
         ({} {})",
        request.method(),
        request.path()
    );
    Response::error(message, 404)
}

/// A JavaScript `Error` with `message`: what a rejected RPC call carries to the caller.
pub(crate) fn js_error(message: &str) -> JsValue {
    worker::js_sys::Error::new(message).into()
}

/// A [`RouteError`] as the objects send it to the Worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Refusal {
    NotFound {
        message: String,
    },
    Refused {
        message: String,
    },
    Busy {
        message: String,
        retry_after_ms: u64,
    },
    Failed {
        message: String,
    },
}

impl From<RouteError> for ObjectReply {
    fn from(error: RouteError) -> Self {
        let refusal = match error {
            RouteError::NotFound(message) => Refusal::NotFound { message },
            RouteError::Refused(message) => Refusal::Refused { message },
            RouteError::Busy {
                message,
                retry_after,
            } => Refusal::Busy {
                message,
                retry_after_ms: u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX),
            },
            RouteError::Failed(message) => Refusal::Failed { message },
        };
        ObjectReply::Refused(refusal)
    }
}

impl From<Refusal> for RouteError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::NotFound { message } => RouteError::NotFound(message),
            Refusal::Refused { message } => RouteError::Refused(message),
            Refusal::Busy {
                message,
                retry_after_ms,
            } => RouteError::Busy {
                message,
                retry_after: std::time::Duration::from_millis(retry_after_ms),
            },
            Refusal::Failed { message } => RouteError::Failed(message),
        }
    }
}

impl ObjectReply {
    /// The snapshot, or the refusal as the router's error.
    pub(crate) fn into_snapshot(self) -> Result<TaskSnapshot, RouteError> {
        match self {
            ObjectReply::Snapshot(snapshot) => Ok(snapshot),
            other => Err(other.into_refusal("a task snapshot")),
        }
    }

    /// The snapshot (`Some`), `None` for `Gone`, or the refusal as the router's error.
    #[cfg(task_listing)]
    pub(crate) fn into_listed(self) -> Result<Option<TaskSnapshot>, RouteError> {
        match self {
            ObjectReply::Snapshot(snapshot) => Ok(Some(snapshot)),
            ObjectReply::Gone => Ok(None),
            other => Err(other.into_refusal("a listed task")),
        }
    }

    /// What the inspector shows of the task: the view, `Skipped`, or `Gone`.
    #[cfg(feature = "inspector")]
    pub(crate) fn into_view(self) -> Result<Candidate, RouteError> {
        match self {
            ObjectReply::View(view) => Ok(Candidate::Shown(view)),
            ObjectReply::Skipped => Ok(Candidate::Skipped),
            ObjectReply::Gone => Ok(Candidate::Gone),
            other => Err(other.into_refusal("the inspector's view of a task")),
        }
    }

    /// `Ok` for `Done`, or the refusal as the router's error.
    pub(crate) fn into_done(self) -> Result<(), RouteError> {
        match self {
            ObjectReply::Done => Ok(()),
            other => Err(other.into_refusal("an acknowledgement")),
        }
    }

    fn into_refusal(self, expected: &str) -> RouteError {
        match self {
            ObjectReply::Refused(refusal) => refusal.into(),
            other => RouteError::Failed(format!(
                "the task's Durable Object answered {other:?} where {expected} was expected \
                 (are the Worker and the object from the same deploy?)"
            )),
        }
    }
}

/// What a listing learns of one candidate task.
#[cfg(task_listing)]
#[derive(Debug)]
pub(crate) enum Candidate<T = Value> {
    /// The task, as the listing shows it.
    Shown(T),
    /// The task exists and the listing leaves it out (only the inspector's filter does).
    #[cfg_attr(not(feature = "inspector"), allow(dead_code))]
    Skipped,
    /// There is no such task (any more): the index may forget it.
    Gone,
}

#[cfg(task_listing)]
impl IndexReply {
    /// The entries of a page.
    pub(crate) fn into_entries(self) -> Result<Vec<ListPosition>, RouteError> {
        match self {
            IndexReply::Entries(entries) => Ok(entries),
            other => Err(unexpected_index_reply(&other, "a page of entries")),
        }
    }

    /// `Ok` for `Done`.
    pub(crate) fn into_done(self) -> Result<(), RouteError> {
        match self {
            IndexReply::Done => Ok(()),
            other => Err(unexpected_index_reply(&other, "an acknowledgement")),
        }
    }
}

#[cfg(task_listing)]
fn unexpected_index_reply(reply: &IndexReply, expected: &str) -> RouteError {
    RouteError::Failed(format!(
        "the task index answered {reply:?} where {expected} was expected (are the Worker and \
         the index from the same deploy?)"
    ))
}
