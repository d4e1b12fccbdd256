//! The validators against a scripted authorization server: what each answer leads to, what is
//! cached and for how long. The hosts' black-box tests (`tests/tests/oauth_*.rs`) check the
//! JWT path end to end.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Value, json};

use super::outbound::{Fetched, Outbound};
use super::{OAuth, TokenRefusal};
use crate::core::Timestamp;
use crate::runtime::LocalBoxFuture;

const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "https://mcp.example/mcp";
const INTROSPECT: &str = "https://as.example/introspect";

/// Answers by URL, counts requests, and keeps the time the test sets.
#[derive(Default)]
struct Scripted {
    answers: RefCell<HashMap<String, Result<Fetched, String>>>,
    requests: Cell<usize>,
    forms: RefCell<Vec<String>>,
    now: Cell<u64>,
}

impl Scripted {
    fn answer(&self, url: &str, status: u16, body: &Value) {
        let fetched = Fetched {
            status,
            body: body.to_string().into_bytes(),
        };
        self.answers
            .borrow_mut()
            .insert(url.to_owned(), Ok(fetched));
    }

    fn fail(&self, url: &str) {
        self.answers
            .borrow_mut()
            .insert(url.to_owned(), Err("connection refused".to_owned()));
    }

    fn fetch(&self, url: &str) -> Result<Fetched, String> {
        self.requests.set(self.requests.get() + 1);
        self.answers
            .borrow()
            .get(url)
            .cloned()
            .unwrap_or_else(|| Err(format!("nothing at {url}")))
    }
}

impl Outbound for Scripted {
    fn get<'a>(&'a self, url: &'a str) -> LocalBoxFuture<'a, Result<Fetched, String>> {
        Box::pin(std::future::ready(self.fetch(url)))
    }

    fn post_form<'a>(
        &'a self,
        url: &'a str,
        form: String,
        authorization: Option<String>,
    ) -> LocalBoxFuture<'a, Result<Fetched, String>> {
        assert!(authorization.is_some_and(|value| value.starts_with("Basic ")));
        self.forms.borrow_mut().push(form);
        Box::pin(std::future::ready(self.fetch(url)))
    }

    fn now(&self) -> Timestamp {
        Timestamp(self.now.get())
    }
}

fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("the scripted server answers at once"),
    }
}

fn introspecting() -> (OAuth, Rc<Scripted>) {
    let scripted = Rc::new(Scripted::default());
    scripted.now.set(1_000_000_000);
    scripted.answer(
        "https://as.example/.well-known/oauth-authorization-server",
        200,
        &json!({ "issuer": ISSUER, "introspection_endpoint": INTROSPECT }),
    );
    let mut oauth = OAuth::new(RESOURCE, [ISSUER])
        .unwrap()
        .introspection("mcp-server", "s3cret");
    oauth.reach_through(Rc::clone(&scripted) as Rc<dyn Outbound>);
    (oauth, scripted)
}

fn active(exp: u64) -> Value {
    json!({
        "active": true,
        "sub": "alice",
        "client_id": "claude",
        "scope": "mcp admin",
        "aud": ["https://MCP.example/mcp/"],
        "exp": exp,
    })
}

#[test]
fn an_active_token_is_its_subject_and_the_answer_is_reused_for_a_minute() {
    let (oauth, scripted) = introspecting();
    scripted.answer(INTROSPECT, 200, &active(2_000_000));
    let principal = ready(oauth.validate("opaque-token")).unwrap();
    assert_eq!(principal.binding(), "https://as.example#alice");
    assert_eq!(principal.client_id.as_deref(), Some("claude"));
    assert_eq!(principal.scopes, ["mcp", "admin"]);
    assert_eq!(
        scripted.forms.borrow().as_slice(),
        ["token=opaque-token&token_type_hint=access_token"]
    );
    let after_discovery = scripted.requests.get();

    ready(oauth.validate("opaque-token")).unwrap();
    assert_eq!(scripted.requests.get(), after_discovery, "reused");
    scripted.now.set(scripted.now.get() + 61_000);
    ready(oauth.validate("opaque-token")).unwrap();
    assert_eq!(
        scripted.requests.get(),
        after_discovery + 1,
        "asked again after a minute"
    );
}

#[test]
fn an_answer_is_never_reused_past_the_tokens_expiry() {
    let (oauth, scripted) = introspecting();
    // Expires 10 s from now.
    scripted.answer(INTROSPECT, 200, &active(1_000_010));
    ready(oauth.validate("short-lived")).unwrap();
    scripted.now.set(scripted.now.get() + 11_000);
    scripted.answer(INTROSPECT, 200, &json!({ "active": false }));
    let refused = ready(oauth.validate("short-lived")).unwrap_err();
    assert!(matches!(refused, TokenRefusal::Invalid(reason) if reason.contains("not active")));
}

#[test]
fn inactive_foreign_and_subjectless_tokens_are_invalid() {
    for (answer, said) in [
        (json!({ "active": false }), "not active"),
        (
            json!({ "active": true, "sub": "alice", "aud": "https://other.example/mcp" }),
            "not for this server",
        ),
        (
            json!({ "active": true, "sub": "alice" }),
            "not for this server",
        ),
        (json!({ "active": true, "aud": RESOURCE }), "no subject"),
        (
            json!({ "active": true, "sub": "alice", "aud": RESOURCE, "exp": 999_999 }),
            "expired",
        ),
        (
            json!({ "active": true, "sub": "alice", "aud": RESOURCE, "iss": "https://evil.example" }),
            "another authorization server",
        ),
    ] {
        let (oauth, scripted) = introspecting();
        scripted.answer(INTROSPECT, 200, &answer);
        let refused = ready(oauth.validate("token")).unwrap_err();
        assert!(
            matches!(&refused, TokenRefusal::Invalid(reason) if reason.contains(said)),
            "{answer}: {refused:?}"
        );
    }
}

#[test]
fn an_outage_is_unavailable_and_asked_again_on_the_next_request() {
    let (oauth, scripted) = introspecting();
    scripted.fail(INTROSPECT);
    let refused = ready(oauth.validate("token")).unwrap_err();
    assert!(
        matches!(refused, TokenRefusal::Unavailable(_)),
        "{refused:?}"
    );
    scripted.answer(INTROSPECT, 200, &active(2_000_000));
    assert!(ready(oauth.validate("token")).is_ok(), "not cached");
}

#[test]
fn a_jwt_shaped_token_goes_to_the_key_check_and_a_malformed_one_reaches_no_server() {
    let (oauth, scripted) = introspecting();
    let refused = ready(oauth.validate("eyJhbGciOiJub25lIn0.e30.")).unwrap_err();
    assert!(matches!(refused, TokenRefusal::Invalid(_)), "{refused:?}");
    assert_eq!(scripted.requests.get(), 0);
}

#[test]
fn without_a_host_client_a_token_is_unavailable_never_accepted() {
    let oauth = OAuth::new(RESOURCE, [ISSUER]).unwrap();
    let refused = ready(oauth.validate("a.b.c")).unwrap_err();
    assert!(
        matches!(refused, TokenRefusal::Unavailable(_)),
        "{refused:?}"
    );
}

#[test]
fn settings_name_the_setting_to_fix() {
    let issuer = || Some(ISSUER.to_owned());
    let resource = || Some(RESOURCE.to_owned());
    assert!(
        OAuth::from_host_settings(None, None, None)
            .unwrap()
            .is_none()
    );
    let only_issuer = OAuth::from_host_settings(issuer(), None, None).unwrap_err();
    assert!(
        only_issuer.contains("DURABLE_MCP_OAUTH_RESOURCE"),
        "{only_issuer}"
    );
    let http =
        OAuth::from_host_settings(Some("http://as.example".into()), resource(), None).unwrap_err();
    assert!(http.contains("DURABLE_MCP_OAUTH_ISSUER"), "{http}");
    let relative = OAuth::from_host_settings(issuer(), Some("/mcp".into()), None).unwrap_err();
    assert!(
        relative.contains("DURABLE_MCP_OAUTH_RESOURCE"),
        "{relative}"
    );
    let oauth = OAuth::from_host_settings(
        Some(format!("{ISSUER}, http://127.0.0.1:9000")),
        resource(),
        Some("mcp, admin".into()),
    )
    .unwrap()
    .unwrap();
    assert_eq!(oauth.issuer_ids(), [ISSUER, "http://127.0.0.1:9000"]);
    assert_eq!(oauth.required_scopes(), ["mcp", "admin"]);
}
