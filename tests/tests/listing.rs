//! Listing a caller's tasks through the engine, with the router's cursors (`tasks/list` below
//! the router), on virtual time, on every store.

mod common;

use std::time::Duration;

use common::{Setup, reply, task};

use durable_mcp::__internals::{decode_cursor, encode_cursor};
use durable_mcp::TaskStatus;
use durable_mcp::http::{CreateTask, TaskSnapshot};
use durable_mcp::store::ListPosition;
use durable_mcp::wire::code;
use serde_json::json;

const ADA: &str = "principal:ada";
const BOB: &str = "principal:bob";

/// A task that waits for an answer (`q`), then completes; kept for an hour.
fn waiting_task() -> durable_mcp::TaskDefinition {
    task("t", |cx, _| {
        Box::pin(async move {
            cx.elicit("q", common::ask("go on?")).await?;
            Ok(reply("done"))
        })
    })
    .ttl(Some(Duration::from_secs(3600)))
}

/// Creates a task of `t` listed under `scope` (none if `None`) and runs it until idle.
fn create(env: &mut common::Env, scope: Option<&str>) -> String {
    let mut request = CreateTask::new("t", json!({}));
    request.list_scope = scope.map(str::to_owned);
    let id = env.create_task(request);
    env.run_until_idle();
    id
}

/// One page of a listing, with the cursor of the next as the router sends it.
#[derive(Debug, PartialEq)]
struct Page {
    tasks: Vec<TaskSnapshot>,
    next_cursor: Option<String>,
}

fn ids(page: &Page) -> Vec<String> {
    page.tasks.iter().map(|task| task.task_id.clone()).collect()
}

/// The page after `cursor`, as `tasks/list` reads it: the cursor decoded, the engine's page,
/// the next position encoded.
fn list(env: &common::Env, scope: &str, cursor: Option<&str>, limit: usize) -> Page {
    let after = cursor.map(|cursor| decode_cursor(cursor).expect("a cursor of this server"));
    let page = env
        .engine()
        .list(scope, after.as_ref(), limit)
        .expect("list");
    Page {
        tasks: page.items,
        next_cursor: page.next.as_ref().map(encode_cursor),
    }
}

/// Every page of `scope`, following the cursors, as ids.
fn walk(env: &common::Env, scope: &str, limit: usize) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = list(env, scope, cursor.as_deref(), limit);
        pages.push(ids(&page));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return pages,
        }
    }
}

fn a_listing_holds_the_scopes_tasks_oldest_first_as_get_shows_them(setup: Setup) {
    let mut env = setup(waiting_task());
    let first = create(&mut env, Some(ADA));
    env.advance("1s");
    let other = create(&mut env, Some(BOB));
    let unlisted = create(&mut env, None);
    env.advance("1s");
    let second = create(&mut env, Some(ADA));
    env.update(&second, json!({ "q": { "action": "accept" } }));
    env.run_until_idle();
    assert_eq!(env.status(&second), TaskStatus::Completed);

    let page = list(&env, ADA, None, 10);
    assert_eq!(ids(&page), [first.clone(), second.clone()]);
    assert_eq!(page.next_cursor, None, "one page holds them all");
    assert_eq!(page.tasks[0], env.get(&first), "input requests included");
    assert_eq!(page.tasks[0].input_requests.len(), 1);
    assert_eq!(page.tasks[1], env.get(&second));
    assert_eq!(ids(&list(&env, BOB, None, 10)), [other]);
    assert!(list(&env, "principal:eve", None, 10).tasks.is_empty());
    let everywhere = [ADA, BOB, "", "principal:eve"];
    for scope in everywhere {
        let listed = ids(&list(&env, scope, None, 10));
        assert!(
            !listed.contains(&unlisted),
            "a task without a scope is never listed"
        );
    }
}

fn pages_follow_cursors_and_see_tasks_created_meanwhile(setup: Setup) {
    let mut env = setup(waiting_task());
    let mut created = Vec::new();
    for _ in 0..5 {
        created.push(create(&mut env, Some(ADA)));
    }
    // Some in the same millisecond, some later: the order is (created_at, id).
    env.advance("1ms");
    created.push(create(&mut env, Some(ADA)));
    let mut expected = created.clone();
    expected[..5].sort();

    let first = list(&env, ADA, None, 2);
    assert_eq!(ids(&first), expected[..2]);
    let cursor = first.next_cursor.expect("more pages");
    // Created between two pages: it comes last, after everything already there.
    env.advance("1s");
    let late = create(&mut env, Some(ADA));
    expected.push(late);
    let second = list(&env, ADA, Some(&cursor), 2);
    assert_eq!(ids(&second), expected[2..4]);
    let second_again = list(&env, ADA, Some(&cursor), 2);
    assert_eq!(second_again, second, "a cursor can be used again");
    let third = list(&env, ADA, second.next_cursor.as_deref(), 2);
    assert_eq!(ids(&third), expected[4..6]);
    let last = list(&env, ADA, third.next_cursor.as_deref(), 2);
    assert_eq!(ids(&last), expected[6..]);
    assert_eq!(last.next_cursor, None);

    let pages = walk(&env, ADA, 3);
    assert_eq!(pages.concat(), expected, "every task once, in order");
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
    let exact = walk(&env, ADA, 7);
    assert_eq!(
        exact,
        [expected.clone()],
        "a full last page says it is the last"
    );
}

fn tasks_past_their_purge_time_are_never_listed(setup: Setup) {
    let mut env = setup(
        task("t", |cx, _| {
            Box::pin(async move {
                cx.sleep("long", "2h").await?;
                Ok(reply("done"))
            })
        })
        .ttl(Some(Duration::from_secs(3600))),
    );
    let expiring = create(&mut env, Some(ADA));
    env.advance("30m");
    let kept = create(&mut env, Some(ADA));
    env.advance("30m");
    // The first task expired: failed, and listed (as `tasks/get` shows it) for one minute.
    let page = list(&env, ADA, None, 10);
    assert_eq!(ids(&page), [expiring.clone(), kept.clone()]);
    assert_eq!(page.tasks[0].status, TaskStatus::Failed);
    // Past its purge time, before the tick that purges it: stored, but not listed.
    let purge_at = env.now().saturating_add(Duration::from_secs(60));
    env.clock().set(purge_at);
    assert!(env.engine().journal(&expiring).expect("read").is_some());
    assert_eq!(ids(&list(&env, ADA, None, 10)), std::slice::from_ref(&kept));
    assert_eq!(
        walk(&env, ADA, 1),
        [vec![kept.clone()]],
        "a page is not cut short by a task that is not shown"
    );
    env.advance("1ms");
    assert!(env.engine().journal(&expiring).expect("read").is_none());
    assert_eq!(ids(&list(&env, ADA, None, 10)), [kept]);
}

fn pages_skip_hidden_tasks_and_still_fill_up(setup: Setup) {
    let mut env = setup(
        task("t", |_, _| Box::pin(async { Ok(reply("done")) })).ttl(Some(Duration::from_secs(60))),
    );
    let mut shown = Vec::new();
    for n in 0..6 {
        let mut request = CreateTask::new("t", json!({}));
        request.list_scope = Some(ADA.to_owned());
        if n % 2 == 0 {
            // Kept for good: the rest reach their purge time below.
            request.ttl = Some(None);
        }
        let id = env.create_task(request);
        if n % 2 == 0 {
            shown.push(id);
        }
        env.advance("1ms");
    }
    env.run_until_idle();
    env.clock()
        .set(env.now().saturating_add(Duration::from_secs(60)));
    let page = list(&env, ADA, None, 2);
    assert_eq!(ids(&page), shown[..2]);
    assert!(page.next_cursor.is_some());
    assert_eq!(walk(&env, ADA, 2).concat(), shown);
}

fn a_bad_cursor_is_invalid_params(setup: Setup) {
    let mut env = setup(waiting_task());
    create(&mut env, Some(ADA));
    for cursor in ["", "garbage", "MTo", "%%%"] {
        let error = decode_cursor(cursor).expect_err(cursor);
        assert_eq!(error.error.code, code::INVALID_PARAMS, "{cursor:?}");
        assert!(
            error
                .error
                .message
                .contains("is not one this server issued"),
            "{}",
            error.error.message
        );
    }
}

fn limits_are_clamped(setup: Setup) {
    let mut env = setup(waiting_task());
    for _ in 0..3 {
        create(&mut env, Some(ADA));
        env.advance("1ms");
    }
    let one = list(&env, ADA, None, 0);
    assert_eq!(one.tasks.len(), 1, "a zero limit still shows a task");
    assert!(one.next_cursor.is_some());
    assert_eq!(list(&env, ADA, None, usize::MAX).tasks.len(), 3);
}

fn listed_answers_for_one_task_in_one_scope(setup: Setup) {
    let mut env = setup(waiting_task());
    let id = create(&mut env, Some(ADA));
    let unlisted = create(&mut env, None);
    let engine = env.engine();
    assert_eq!(engine.listed(&id, ADA).expect("read"), Some(env.get(&id)));
    assert_eq!(engine.listed(&id, BOB).expect("read"), None);
    assert_eq!(engine.listed(&unlisted, ADA).expect("read"), None);
    assert_eq!(engine.listed("never-created", ADA).expect("read"), None);
    let position = decode_cursor(&durable_mcp::__internals::encode_cursor(&ListPosition {
        created_at: env.get(&id).created_at,
        task_id: id.clone(),
    }))
    .expect("a cursor this server issued");
    let after = engine.list(ADA, Some(&position), 10).expect("list");
    assert!(after.items.is_empty());
    assert_eq!(after.next, None);
}

fn recreating_a_task_in_another_scope_is_refused(setup: Setup) {
    let env = setup(waiting_task());
    let mut request = CreateTask::new("t", json!({}));
    request.task_id = Some("fixed".into());
    request.list_scope = Some(ADA.into());
    env.engine().create_task(request.clone()).expect("create");
    env.engine()
        .create_task(request.clone())
        .expect("the same creation again");
    request.list_scope = Some(BOB.into());
    let error = env
        .engine()
        .create_task(request)
        .expect_err("another scope");
    assert!(error.to_string().contains("is taken"), "{error}");
    assert_eq!(
        env.engine().list(BOB, None, 10).expect("list").items,
        Vec::new()
    );
}

common::on_every_store!(
    a_listing_holds_the_scopes_tasks_oldest_first_as_get_shows_them,
    pages_follow_cursors_and_see_tasks_created_meanwhile,
    tasks_past_their_purge_time_are_never_listed,
    pages_skip_hidden_tasks_and_still_fill_up,
    a_bad_cursor_is_invalid_params,
    limits_are_clamped,
    listed_answers_for_one_task_in_one_scope,
    recreating_a_task_in_another_scope_is_refused,
);
