//! The store conformance suite: one set of checks every [`Store`] must pass.
//!
//! Each check runs on a fresh store from the factory and compares what the store returns with
//! what [`TaskState::apply`] (the in-memory reference) computes from the same writes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::core::{
    Applied, Guard, InputRow, ListPosition, LoadScope, MAX_DURATION, StepKind, StepRow, StepStatus,
    TaskFailure, TaskRecord, TaskState, TaskStatus, Timestamp, Write,
};
use crate::runtime::Store;

/// 2^53 − 1: integer columns hold values up to this, exactly, in every store.
const MAX_EXACT_INTEGER: u64 = (1 << 53) - 1;

/// One check of the suite, run on a fresh store.
type Check = fn(&dyn Store);

/// Runs every check against stores made by `make`, panicking with the check's name on the
/// first difference.
pub fn store_conformance<S: Store>(make: impl Fn() -> S) {
    let checks: &[(&str, Check)] = &[
        (
            "create inserts once and returns the stored row",
            create_is_insert_or_get,
        ),
        (
            "reads of a missing task write nothing",
            missing_task_reads_write_nothing,
        ),
        (
            "every write applies as the reference applies it",
            writes_match_reference,
        ),
        ("a control load returns only pending steps", control_scope),
        (
            "guards refuse stale writes and write nothing",
            guards_refuse,
        ),
        (
            "an apply that changes the task row bumps the version once",
            version_bumps,
        ),
        (
            "the cancel flag is reported as of the commit",
            cancel_flag_reported,
        ),
        ("status meta is kept when none is given", status_meta_kept),
        (
            "only a working task moves to input_required",
            await_input_from_working_only,
        ),
        ("purge deletes one task's rows only", purge_is_scoped),
        ("task ids come oldest first", task_ids_ordered),
        ("one input row reads back fresh", load_input_reads_one_row),
        (
            "tasks with the same step keys stay apart",
            same_keys_in_two_tasks,
        ),
        ("values round-trip exactly", values_round_trip),
        (
            "a listing holds one scope's tasks, oldest first, then by id",
            listing_order_and_scopes,
        ),
        (
            "a listing pages on from a position and sees tasks created meanwhile",
            listing_pages_from_a_position,
        ),
        (
            "the listing scope is fixed at creation",
            listing_scope_is_fixed,
        ),
        (
            "a purged task leaves its listing",
            listing_drops_purged_tasks,
        ),
        (
            "every task, of any scope or none, lists in order a page at a time",
            every_task_listing,
        ),
        (
            "the latest timestamps and longest durations round-trip",
            latest_times_round_trip,
        ),
    ];
    for (name, check) in checks {
        let store = make();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&store)));
        if let Err(panic) = outcome {
            let message = crate::runtime::panic_text(&*panic);
            panic!("store conformance check failed: {name}: {message}");
        }
    }
}

pub(super) fn task(id: &str, created_at: u64) -> TaskRecord {
    TaskRecord {
        task_id: id.to_owned(),
        tool_name: "tool".to_owned(),
        input: r#"{"to":"ada@example.org"}"#.to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        status_meta: None,
        status_published: 0,
        created_at: Timestamp(created_at),
        last_updated_at: Timestamp(created_at),
        finished_at: None,
        ttl: Some(Duration::from_secs(3600)),
        poll_interval: Duration::from_secs(5),
        result: None,
        error: None,
        cancel_requested: false,
        run_attempt: 0,
        generation: 0,
        next_run_at: Some(Timestamp(created_at)),
        run_cause: None,
        cut_next_sleep: false,
        principal: None,
        list_scope: None,
        code_version: Some("1.4.2".to_owned()),
        parent: None,
        version: 0,
    }
}

fn listed_task(id: &str, created_at: u64, scope: &str) -> TaskRecord {
    TaskRecord {
        list_scope: Some(scope.to_owned()),
        ..task(id, created_at)
    }
}

fn list(store: &dyn Store, scope: &str, after: Option<(u64, &str)>, limit: usize) -> Vec<String> {
    let after = after.map(|(created_at, id)| ListPosition {
        created_at: Timestamp(created_at),
        task_id: id.to_owned(),
    });
    store
        .list_tasks(scope, after.as_ref(), limit)
        .expect("list_tasks")
        .into_iter()
        .map(|task| task.task_id)
        .collect()
}

fn step(key: &str, kind: StepKind, status: StepStatus, seq: u64) -> StepRow {
    StepRow {
        key: key.to_owned(),
        kind,
        status,
        result: (status == StepStatus::Completed).then(|| format!(r#"{{"seq":{seq}}}"#)),
        attempt: 1,
        next_attempt_at: (status == StepStatus::Pending).then_some(Timestamp(5_000 + seq)),
        wake_at: (kind == StepKind::Sleep).then_some(Timestamp(9_000 + seq)),
        last_error: (status != StepStatus::Completed).then(|| "boom".to_owned()),
        seq,
        created_at: Timestamp(1_000 + seq),
        completed_at: (status != StepStatus::Pending).then_some(Timestamp(2_000 + seq)),
    }
}

fn input(key: &str, blocking: bool, seq: u64) -> InputRow {
    InputRow {
        key: key.to_owned(),
        request: r#"{"message":"approve?"}"#.to_owned(),
        response: None,
        answered: false,
        answered_at: None,
        timeout_at: blocking.then_some(Timestamp(60_000)),
        timed_out: false,
        blocking,
        consumed: false,
        seq,
        created_at: Timestamp(1_000 + seq),
    }
}

fn reference(task: &TaskRecord) -> TaskState {
    TaskState {
        task: task.clone(),
        steps: BTreeMap::new(),
        inputs: BTreeMap::new(),
    }
}

fn load(store: &dyn Store, id: &str, scope: LoadScope) -> Option<TaskState> {
    store.load(id, scope).expect("load")
}

fn apply(store: &dyn Store, id: &str, guard: Guard, writes: &[Write]) -> Applied {
    store.apply(id, guard, writes).expect("apply")
}

fn create_is_insert_or_get(store: &dyn Store) {
    let first = task("t1", 10);
    assert_eq!(store.create(&first).expect("create"), first);
    let mut second = task("t1", 20);
    second.tool_name = "other".into();
    assert_eq!(store.create(&second).expect("create again"), first);
    assert_eq!(load(store, "t1", LoadScope::Full), Some(reference(&first)));
}

fn missing_task_reads_write_nothing(store: &dyn Store) {
    assert_eq!(load(store, "nope", LoadScope::Full), None);
    assert_eq!(load(store, "nope", LoadScope::Control), None);
    assert_eq!(store.load_input("nope", "k").expect("load_input"), None);
    let write = Write::PutStep(step("s", StepKind::Do, StepStatus::Completed, 1));
    assert_eq!(
        apply(store, "nope", Guard::default(), &[write]),
        Applied::Stale
    );
    assert_eq!(store.task_ids().expect("task_ids"), Vec::<String>::new());
    assert_eq!(list(store, "principal:ada", None, 10), Vec::<String>::new());
    assert_eq!(load(store, "nope", LoadScope::Full), None);
}

fn writes_match_reference(store: &dyn Store) {
    let created = task("t1", 10);
    store.create(&created).expect("create");
    let mut expected = reference(&created);
    let mut changed = created.clone();
    changed.status = TaskStatus::Failed;
    changed.error = Some(TaskFailure::internal("task expired after 1h"));
    changed.finished_at = Some(Timestamp(99));
    changed.principal = Some("alice".into());
    // Not written: the scope is fixed at creation (the reference keeps it too).
    changed.list_scope = Some("principal:alice".into());
    changed.ttl = None;
    changed.status_published = 3;
    changed.run_attempt = 7;
    changed.generation = 4;
    changed.cut_next_sleep = true;
    changed.next_run_at = Some(Timestamp(98));
    changed.run_cause = Some("answer".into());
    changed.parent = Some(crate::core::ParentLink {
        task_id: "p1".into(),
        key: "resize#2".into(),
        notified: true,
        root: Some("r0".into()),
    });
    let mut answered = input("approve", true, 5);
    answered.answered = true;
    answered.answered_at = Some(Timestamp(77));
    answered.response = Some(r#"{"action":"accept"}"#.into());
    let batches = [
        vec![
            Write::PutStep(step("fetch", StepKind::Do, StepStatus::Completed, 1)),
            Write::PutStep(step("fetch#2", StepKind::Do, StepStatus::Pending, 2)),
        ],
        vec![Write::PutStep(step(
            "nap",
            StepKind::Sleep,
            StepStatus::Pending,
            3,
        ))],
        vec![
            Write::PutInput(input("approve", true, 5)),
            Write::AwaitInput { at: Timestamp(50) },
        ],
        vec![Write::PutInput(input("note", false, 6))],
        vec![Write::PutStep(step(
            "peek",
            StepKind::Check,
            StepStatus::Completed,
            7,
        ))],
        vec![Write::PutStep(step(
            "$now",
            StepKind::Value,
            StepStatus::Completed,
            8,
        ))],
        vec![Write::PutStep(step(
            "resize",
            StepKind::Child,
            StepStatus::Pending,
            9,
        ))],
        vec![Write::PublishStatus {
            message: "fetching".into(),
            meta: Some(r#"{"done":1}"#.into()),
            published: 1,
            at: Timestamp(60),
        }],
        vec![Write::PutInput(answered)],
        vec![Write::PutStep(step(
            "fetch#2",
            StepKind::Do,
            StepStatus::Failed,
            2,
        ))],
        vec![
            Write::ClearSleepCut,
            Write::PutTask(changed),
            Write::ClearSleepCut,
        ],
    ];
    for (index, batch) in batches.iter().enumerate() {
        let guard = Guard {
            version: Some(expected.task.version),
            generation: Some(expected.task.generation),
        };
        let reference_applied = expected.apply_guarded(guard, batch);
        assert_eq!(
            apply(store, "t1", guard, batch),
            reference_applied,
            "batch {index}"
        );
        assert_eq!(
            load(store, "t1", LoadScope::Full).as_ref(),
            Some(&expected),
            "batch {index}"
        );
    }
}

fn control_scope(store: &dyn Store) {
    let created = task("t1", 10);
    store.create(&created).expect("create");
    let writes = [
        Write::PutStep(step("a", StepKind::Do, StepStatus::Completed, 1)),
        Write::PutStep(step("b", StepKind::Do, StepStatus::Pending, 2)),
        Write::PutStep(step("c", StepKind::Sleep, StepStatus::Pending, 3)),
        Write::PutStep(step("d", StepKind::Do, StepStatus::Failed, 4)),
        Write::PutInput(input("e", true, 5)),
    ];
    apply(store, "t1", Guard::default(), &writes);
    let full = load(store, "t1", LoadScope::Full).expect("task");
    let control = load(store, "t1", LoadScope::Control).expect("task");
    assert_eq!(full.steps.keys().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
    assert_eq!(control.steps.keys().collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(control, full.scoped(LoadScope::Control));
    assert_eq!(control.inputs.len(), 1);
}

fn guards_refuse(store: &dyn Store) {
    let created = task("t1", 10);
    store.create(&created).expect("create");
    let write = [Write::PutStep(step(
        "a",
        StepKind::Do,
        StepStatus::Completed,
        1,
    ))];
    let stale_version = Guard {
        version: Some(5),
        generation: None,
    };
    let stale_generation = Guard {
        version: None,
        generation: Some(1),
    };
    assert_eq!(apply(store, "t1", stale_version, &write), Applied::Stale);
    assert_eq!(apply(store, "t1", stale_generation, &write), Applied::Stale);
    assert_eq!(
        load(store, "t1", LoadScope::Full),
        Some(reference(&created))
    );
    let both = Guard {
        version: Some(0),
        generation: Some(0),
    };
    assert!(matches!(
        apply(store, "t1", both, &write),
        Applied::Done { .. }
    ));
}

fn version_bumps(store: &dyn Store) {
    store.create(&task("t1", 10)).expect("create");
    let version = || {
        load(store, "t1", LoadScope::Control)
            .expect("task")
            .task
            .version
    };
    let task_writes = [
        Write::ClearSleepCut,
        Write::AwaitInput { at: Timestamp(20) },
    ];
    for expected in 1..=3 {
        apply(store, "t1", Guard::default(), &task_writes);
        assert_eq!(version(), expected);
    }
    let step = Write::PutStep(step("a", StepKind::Do, StepStatus::Completed, 1));
    let input = Write::PutInput(input("b", false, 2));
    apply(store, "t1", Guard::default(), &[step, input]);
    apply(store, "t1", Guard::default(), &[]);
    assert_eq!(version(), 3, "step and input rows leave the version alone");
}

fn cancel_flag_reported(store: &dyn Store) {
    let mut created = task("t1", 10);
    store.create(&created).expect("create");
    let no_op = apply(store, "t1", Guard::default(), &[]);
    assert_eq!(
        no_op,
        Applied::Done {
            cancel_requested: false
        }
    );
    created.cancel_requested = true;
    let set = apply(store, "t1", Guard::default(), &[Write::PutTask(created)]);
    assert_eq!(
        set,
        Applied::Done {
            cancel_requested: true
        }
    );
    let later = apply(store, "t1", Guard::default(), &[Write::ClearSleepCut]);
    assert_eq!(
        later,
        Applied::Done {
            cancel_requested: true
        }
    );
}

fn status_meta_kept(store: &dyn Store) {
    store.create(&task("t1", 10)).expect("create");
    let publish = |message: &str, meta: Option<&str>, published| Write::PublishStatus {
        message: message.into(),
        meta: meta.map(str::to_owned),
        published,
        at: Timestamp(40),
    };
    apply(
        store,
        "t1",
        Guard::default(),
        &[publish("one", Some(r#"{"n":1}"#), 1)],
    );
    apply(store, "t1", Guard::default(), &[publish("two", None, 2)]);
    let task = load(store, "t1", LoadScope::Control).expect("task").task;
    assert_eq!(task.status_message.as_deref(), Some("two"));
    assert_eq!(task.status_meta.as_deref(), Some(r#"{"n":1}"#));
    assert_eq!(task.status_published, 2);
    assert_eq!(task.last_updated_at, Timestamp(40));
}

fn await_input_from_working_only(store: &dyn Store) {
    let mut done = task("t1", 10);
    done.status = TaskStatus::Completed;
    store.create(&done).expect("create");
    apply(
        store,
        "t1",
        Guard::default(),
        &[Write::AwaitInput { at: Timestamp(50) }],
    );
    let task = load(store, "t1", LoadScope::Control).expect("task").task;
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.last_updated_at, Timestamp(10));
}

fn purge_is_scoped(store: &dyn Store) {
    for id in ["t1", "t2"] {
        store.create(&task(id, 10)).expect("create");
        let writes = [
            Write::PutStep(step("a", StepKind::Do, StepStatus::Completed, 1)),
            Write::PutInput(input("b", false, 2)),
        ];
        apply(store, id, Guard::default(), &writes);
    }
    store.purge("t1").expect("purge");
    store.purge("t1").expect("purge again");
    store.purge("never").expect("purge missing");
    assert_eq!(load(store, "t1", LoadScope::Full), None);
    assert_eq!(store.load_input("t1", "b").expect("load_input"), None);
    let kept = load(store, "t2", LoadScope::Full).expect("t2 kept");
    assert_eq!((kept.steps.len(), kept.inputs.len()), (1, 1));
    assert_eq!(store.task_ids().expect("task_ids"), ["t2"]);
}

fn task_ids_ordered(store: &dyn Store) {
    for (id, at) in [("c", 30), ("a", 10), ("b", 20)] {
        store.create(&task(id, at)).expect("create");
    }
    assert_eq!(store.task_ids().expect("task_ids"), ["a", "b", "c"]);
}

fn load_input_reads_one_row(store: &dyn Store) {
    store.create(&task("t1", 10)).expect("create");
    let row = input("k", false, 1);
    apply(
        store,
        "t1",
        Guard::default(),
        &[Write::PutInput(row.clone())],
    );
    assert_eq!(
        store.load_input("t1", "k").expect("load_input"),
        Some(row.clone())
    );
    assert_eq!(store.load_input("t1", "other").expect("load_input"), None);
    let mut answered = row;
    answered.answered = true;
    answered.response = Some("{}".into());
    apply(
        store,
        "t1",
        Guard::default(),
        &[Write::PutInput(answered.clone())],
    );
    assert_eq!(
        store.load_input("t1", "k").expect("load_input"),
        Some(answered)
    );
}

fn same_keys_in_two_tasks(store: &dyn Store) {
    for (id, seq) in [("t1", 1), ("t2", 2)] {
        store.create(&task(id, 10)).expect("create");
        let writes = [Write::PutStep(step(
            "same",
            StepKind::Do,
            StepStatus::Completed,
            seq,
        ))];
        apply(store, id, Guard::default(), &writes);
    }
    let seq = |id| load(store, id, LoadScope::Full).expect("task").steps["same"].seq;
    assert_eq!((seq("t1"), seq("t2")), (1, 2));
}

fn values_round_trip(store: &dyn Store) {
    let mut unusual = task("t-ünïcødé 🚀", 10);
    unusual.input = format!(r#"{{"text":"{}","quote":"\"'\\n"}}"#, "x".repeat(100_000));
    unusual.status_message = Some(String::new());
    unusual.list_scope = Some("session:ünï 'quoted' \"too\" 🚀".to_owned());
    // The largest integer every store keeps exactly: a Durable Object binds integers as
    // JavaScript numbers (see `Store`).
    unusual.generation = MAX_EXACT_INTEGER;
    unusual.ttl = Some(Duration::from_millis(u64::from(u32::MAX) * 1000));
    store.create(&unusual).expect("create");
    let loaded = load(store, &unusual.task_id, LoadScope::Full).expect("task");
    assert_eq!(loaded.task, unusual);
}

/// A task whose every time is [`Timestamp::MAX`] and every duration [`MAX_DURATION`] (what a
/// sleep, timeout or retention "forever" comes to) is stored and read back unchanged.
fn latest_times_round_trip(store: &dyn Store) {
    let latest = Timestamp::MAX;
    let mut forever = task("t-forever", 10);
    forever.ttl = Some(MAX_DURATION);
    forever.poll_interval = MAX_DURATION;
    forever.next_run_at = Some(latest);
    store.create(&forever).expect("create");
    let mut finished = forever.clone();
    finished.created_at = latest;
    finished.last_updated_at = latest;
    finished.finished_at = Some(latest);
    let mut sleep = step("nap", StepKind::Sleep, StepStatus::Pending, 1);
    sleep.next_attempt_at = Some(latest);
    sleep.wake_at = Some(latest);
    sleep.created_at = latest;
    let mut retry = step("call", StepKind::Do, StepStatus::Failed, 2);
    retry.next_attempt_at = Some(latest);
    retry.completed_at = Some(latest);
    let mut elicit = input("approve", true, 3);
    elicit.timeout_at = Some(latest);
    elicit.answered_at = Some(latest);
    elicit.created_at = latest;
    let writes = [
        Write::PutStep(sleep),
        Write::PutStep(retry),
        Write::PutInput(elicit),
        Write::PutTask(finished),
    ];
    let mut expected = reference(&forever);
    let guard = Guard {
        version: None,
        generation: None,
    };
    let reference_applied = expected.apply_guarded(guard, &writes);
    assert_eq!(apply(store, "t-forever", guard, &writes), reference_applied);
    assert_eq!(
        load(store, "t-forever", LoadScope::Full),
        Some(expected.clone())
    );
    const { assert!(Timestamp::MAX.as_millis() <= MAX_EXACT_INTEGER) };
    assert_eq!(
        store
            .load_input("t-forever", "approve")
            .expect("load input"),
        expected.inputs.get("approve").cloned()
    );
}

fn listing_order_and_scopes(store: &dyn Store) {
    let ada = "principal:ada";
    let bob = "principal:bob";
    for (id, at, scope) in [
        ("c", 30, Some(ada)),
        ("a2", 10, Some(ada)),
        ("b", 20, Some(bob)),
        ("a1", 10, Some(ada)),
        ("z", 5, None),
        ("d", 40, Some(ada)),
    ] {
        let record = match scope {
            Some(scope) => listed_task(id, at, scope),
            None => task(id, at),
        };
        store.create(&record).expect("create");
    }
    assert_eq!(list(store, ada, None, 10), ["a1", "a2", "c", "d"]);
    assert_eq!(list(store, ada, None, 2), ["a1", "a2"], "the limit holds");
    assert_eq!(list(store, bob, None, 10), ["b"]);
    assert_eq!(list(store, "principal:eve", None, 10), Vec::<String>::new());
    assert_eq!(list(store, "", None, 10), Vec::<String>::new(), "no scope");
    let rows = store.list_tasks(ada, None, 1).expect("list_tasks");
    assert_eq!(rows, [listed_task("a1", 10, ada)], "whole rows, as loaded");
}

fn listing_pages_from_a_position(store: &dyn Store) {
    let scope = "session:s1";
    for (id, at) in [("a", 10), ("b", 20), ("c", 30)] {
        store.create(&listed_task(id, at, scope)).expect("create");
    }
    assert_eq!(list(store, scope, None, 2), ["a", "b"]);
    // Created between two pages: later ("d"), in the same millisecond as the page's end but
    // ordered after it ("b2"), and, with a clock that went back, before it ("a0").
    for (id, at) in [("d", 40), ("b2", 20), ("a0", 5)] {
        store.create(&listed_task(id, at, scope)).expect("create");
    }
    assert_eq!(list(store, scope, Some((20, "b")), 2), ["b2", "c"]);
    assert_eq!(list(store, scope, Some((30, "c")), 2), ["d"]);
    assert_eq!(list(store, scope, Some((40, "d")), 2), Vec::<String>::new());
    // A position need not be a stored task's.
    assert_eq!(
        list(store, scope, Some((15, "zzz")), 10),
        ["b", "b2", "c", "d"]
    );
    assert_eq!(list(store, scope, Some((20, "")), 1), ["b"]);
}

fn listing_scope_is_fixed(store: &dyn Store) {
    let created = listed_task("t1", 10, "principal:ada");
    store.create(&created).expect("create");
    let mut moved = created.clone();
    moved.list_scope = Some("principal:eve".into());
    moved.code_version = Some("9.9.9".into());
    moved.status_message = Some("written".into());
    apply(store, "t1", Guard::default(), &[Write::PutTask(moved)]);
    let task = load(store, "t1", LoadScope::Control).expect("task").task;
    assert_eq!(task.status_message.as_deref(), Some("written"));
    assert_eq!(task.list_scope.as_deref(), Some("principal:ada"));
    assert_eq!(
        task.code_version.as_deref(),
        Some("1.4.2"),
        "fixed at creation"
    );
    assert_eq!(list(store, "principal:ada", None, 10), ["t1"]);
    assert_eq!(list(store, "principal:eve", None, 10), Vec::<String>::new());
    let mut again = created;
    again.list_scope = Some("principal:eve".into());
    assert_eq!(
        store
            .create(&again)
            .expect("create again")
            .list_scope
            .as_deref(),
        Some("principal:ada"),
        "creating again returns the stored row"
    );
}

fn every_task_listing(store: &dyn Store) {
    for (id, at, scope) in [
        ("c", 30, Some("principal:ada")),
        ("a2", 10, None),
        ("b", 20, Some("session:s1")),
        ("a1", 10, Some("principal:ada")),
        ("d", 40, None),
    ] {
        let record = match scope {
            Some(scope) => listed_task(id, at, scope),
            None => task(id, at),
        };
        store.create(&record).expect("create");
    }
    let every = |after: Option<(u64, &str)>, limit| -> Vec<String> {
        let after = after.map(|(created_at, id)| ListPosition {
            created_at: Timestamp(created_at),
            task_id: id.to_owned(),
        });
        store
            .list_every_task(after.as_ref(), limit)
            .expect("list_every_task")
            .into_iter()
            .map(|task| task.task_id)
            .collect()
    };
    assert_eq!(every(None, 10), ["a1", "a2", "b", "c", "d"]);
    assert_eq!(every(None, 2), ["a1", "a2"], "the limit holds");
    assert_eq!(every(Some((10, "a2")), 2), ["b", "c"]);
    assert_eq!(every(Some((40, "d")), 2), Vec::<String>::new());
    store.purge("b").expect("purge");
    assert_eq!(every(Some((10, "a2")), 10), ["c", "d"]);
    let rows = store.list_every_task(None, 1).expect("list_every_task");
    assert_eq!(
        rows,
        [listed_task("a1", 10, "principal:ada")],
        "whole rows, as loaded"
    );
}

fn listing_drops_purged_tasks(store: &dyn Store) {
    let scope = "principal:ada";
    for (id, at) in [("t1", 10), ("t2", 20)] {
        store.create(&listed_task(id, at, scope)).expect("create");
    }
    store.purge("t1").expect("purge");
    assert_eq!(list(store, scope, None, 10), ["t2"]);
    store.purge("t2").expect("purge");
    assert_eq!(list(store, scope, None, 10), Vec::<String>::new());
}
