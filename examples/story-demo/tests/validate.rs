//! The fixture story is valid, and each way of breaking it is reported at the right node.

use serde_json::{Value, json};
use story_demo::FIXTURE_JSON;
use story_demo::story::{LoadError, Location, Problem, ProblemKind, load};

/// The fixture as JSON, to break.
fn fixture() -> Value {
    serde_json::from_str(FIXTURE_JSON).expect("the fixture is JSON")
}

/// The node with `id` in a story's JSON.
fn node<'v>(story: &'v mut Value, id: &str) -> &'v mut Value {
    story["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id}"))
}

/// The problems of a story's JSON (it must parse).
fn problems(story: &Value) -> Vec<Problem> {
    match load(&story.to_string()) {
        Ok(_) => Vec::new(),
        Err(LoadError::Invalid(problems)) => problems,
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn the_fixture_is_valid() {
    let story = load(FIXTURE_JSON).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(story.id, "fixture");
}

fn svg_scene(svg: &str) -> impl Fn(&mut Value) {
    let svg = svg.to_owned();
    move |story: &mut Value| story["scenes"]["dunes"] = json!(svg)
}

#[test]
fn each_broken_story_is_reported_at_its_node() {
    /// How to break the fixture.
    type Break = Box<dyn Fn(&mut Value)>;
    /// Whether a problem is the one expected.
    type Expect = fn(&ProblemKind) -> bool;
    let node_at = |id: &str| Location::Node(id.to_owned());
    let cases: Vec<(&str, Break, Location, &str, Expect)> = vec![
        (
            "dangling target",
            Box::new(|s| node(s, "swept")["then"] = json!({ "next": { "goto": "nowhere" } })),
            node_at("swept"),
            "then.next.goto",
            |k| matches!(k, ProblemKind::DanglingTarget { target } if target == "nowhere"),
        ),
        (
            "unreachable node",
            Box::new(|s| {
                let orphan = json!({ "id": "orphan", "beats": ["Alone."],
                                     "then": { "ending": { "id": "alone", "prose": "." } } });
                s["nodes"].as_array_mut().unwrap().push(orphan);
            }),
            node_at("orphan"),
            "id",
            |k| matches!(k, ProblemKind::Unreachable),
        ),
        (
            "dead end (a loop with no way out)",
            Box::new(|s| {
                node(s, "spring")["then"] = json!({ "next": { "goto": "swept" } });
                node(s, "swept")["then"] = json!({ "next": { "goto": "spring" } });
            }),
            node_at("swept"),
            "then",
            |k| matches!(k, ProblemKind::DeadEnd),
        ),
        (
            "cycle",
            Box::new(|s| node(s, "swept")["then"] = json!({ "next": { "goto": "wash" } })),
            node_at("swept"),
            "then.next.goto",
            |k| matches!(k, ProblemKind::Cycle { path } if path == &["wash", "swept", "wash"]),
        ),
        (
            "duplicate node id",
            Box::new(|s| {
                let copy = node(s, "parched").clone();
                s["nodes"].as_array_mut().unwrap().push(copy);
            }),
            node_at("parched"),
            "id",
            |k| matches!(k, ProblemKind::DuplicateId { what: "node", id } if id == "parched"),
        ),
        (
            "unknown scene",
            Box::new(|s| node(s, "spring")["scene"] = json!("oasis")),
            node_at("spring"),
            "scene",
            |k| matches!(k, ProblemKind::UnknownScene { id } if id == "oasis"),
        ),
        (
            "timed fork without fallback",
            Box::new(|s| {
                let fork = &mut node(s, "wash")["then"]["fork"];
                fork.as_object_mut().unwrap().remove("fallback");
            }),
            node_at("wash"),
            "then.fork.timeout_ms",
            |k| matches!(k, ProblemKind::TimedForkWithoutFallback),
        ),
        (
            "fallback without timeout",
            Box::new(|s| {
                let fork = &mut node(s, "wash")["then"]["fork"];
                fork.as_object_mut().unwrap().remove("timeout_ms");
            }),
            node_at("wash"),
            "then.fork.fallback",
            |k| matches!(k, ProblemKind::FallbackWithoutTimeout),
        ),
        (
            "duplicate option id",
            Box::new(|s| node(s, "wash")["then"]["fork"]["options"][1]["id"] = json!("climb")),
            node_at("wash"),
            "then.fork.options[1].id",
            |k| matches!(k, ProblemKind::DuplicateId { what: "option", .. }),
        ),
        (
            "roll weight of 0",
            Box::new(|s| node(s, "ridge")["then"]["roll"]["branches"][0]["weight"] = json!(0)),
            node_at("ridge"),
            "then.roll.branches[0].weight",
            |k| matches!(k, ProblemKind::BadWeight),
        ),
        (
            "unknown resource in a gate",
            Box::new(|s| node(s, "mesa")["gate"]["resource"] = json!("grit")),
            node_at("mesa"),
            "gate.resource",
            |k| matches!(k, ProblemKind::UnknownResource { name } if name == "grit"),
        ),
        (
            "unknown phase",
            Box::new(|s| node(s, "mesa")["phase"] = json!("epilogue")),
            node_at("mesa"),
            "phase",
            |k| matches!(k, ProblemKind::UnknownPhase { id } if id == "epilogue"),
        ),
        (
            "side story that asks",
            Box::new(|s| {
                node(s, "map-fold")["then"] = json!({ "fork": { "question": "Fold it?",
                    "options": [{ "id": "fold", "label": "Fold", "goto": "map-unfold" }] } });
            }),
            node_at("map-fold"),
            "then.fork",
            |k| matches!(k, ProblemKind::ForkInSideStory { action } if action == "read-map"),
        ),
        (
            "side story that reaches the main line",
            Box::new(|s| node(s, "map-fold")["then"] = json!({ "next": { "goto": "mesa" } })),
            node_at("map-fold"),
            "then.next.goto",
            |k| matches!(k, ProblemKind::SideStoryReachesMainLine { node, .. } if node == "mesa"),
        ),
        (
            "return on the main line",
            Box::new(|s| node(s, "swept")["then"] = json!("return")),
            node_at("swept"),
            "then",
            |k| matches!(k, ProblemKind::ReturnOnMainLine),
        ),
        (
            "scene with a script",
            Box::new(svg_scene("<svg><script>alert(1)</script></svg>")),
            Location::Scene("dunes".into()),
            "svg",
            |k| matches!(k, ProblemKind::UnsafeSvg { reason } if reason.contains("<script>")),
        ),
        (
            "scene with an onload",
            Box::new(svg_scene("<svg onload=\"steal()\"></svg>")),
            Location::Scene("dunes".into()),
            "svg",
            |k| matches!(k, ProblemKind::UnsafeSvg { reason } if reason.contains("onload=")),
        ),
        (
            "sprite with an external href",
            Box::new(|s| {
                s["sprites"]["hawk"] =
                    json!("<svg><image href=\"https://example.com/hawk.png\"/></svg>")
            }),
            Location::Sprite("hawk".into()),
            "svg",
            |k| matches!(k, ProblemKind::UnsafeSvg { reason } if reason.contains("example.com")),
        ),
    ];
    for (name, break_it, location, field, expected) in cases {
        let mut story = fixture();
        break_it(&mut story);
        let problems = problems(&story);
        let found = problems
            .iter()
            .any(|p| p.location == location && p.field == field && expected(&p.kind));
        let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            found,
            "{name}: expected a problem at {location}, `{field}`; got {listed:#?}"
        );
    }
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut story = fixture();
    node(&mut story, "spring")["scene"] = json!("oasis");
    node(&mut story, "swept")["then"] = json!({ "next": { "goto": "nowhere" } });
    story["sprites"]["hawk"] = json!("<svg onclick='x()'></svg>");
    let problems = problems(&story);
    assert_eq!(problems.len(), 3, "{problems:#?}");
}

#[test]
fn a_message_names_the_node_the_field_and_the_fix() {
    let mut story = fixture();
    node(&mut story, "swept")["then"] = json!({ "next": { "goto": "nowhere" } });
    let message = problems(&story)[0].to_string();
    assert_eq!(
        message,
        "node `swept`, `then.next.goto`: goes to `nowhere`, which is no node of the story; \
         add a node `nowhere` or fix the id"
    );
}

#[test]
fn a_misspelt_field_fails_to_parse_with_its_path() {
    let mut story = fixture();
    node(&mut story, "swept")["beat"] = json!(["oops"]);
    let Err(LoadError::Parse(message)) = load(&story.to_string()) else {
        panic!("a misspelt field must not parse");
    };
    assert!(
        message.contains("nodes[3]") && message.contains("beat"),
        "{message}"
    );
}

#[test]
fn a_scene_given_twice_fails_to_parse() {
    let json = FIXTURE_JSON.replacen(
        "\"mesa\": \"<svg",
        "\"dunes\": \"<svg></svg>\", \"mesa\": \"<svg",
        1,
    );
    assert_ne!(json, FIXTURE_JSON);
    let Err(LoadError::Parse(message)) = load(&json) else {
        panic!("a duplicate scene must not parse");
    };
    assert!(
        message.contains("scenes") && message.contains("`dunes` is given twice"),
        "{message}"
    );
}
