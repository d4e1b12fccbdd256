//! The rules a story must follow, checked once when it is loaded, so that a walk never meets
//! a broken story: [`ValidStory::new`] returns every problem found, each naming where it is
//! (the node, action, scene or sprite, and the field) and how to fix it.
//!
//! # Why every cycle is refused
//!
//! A story is a directed graph of nodes, and its walk becomes a durable task whose journal
//! keys are built from node ids (`fork:<node>`, `roll:<node>`, ...). If the main line could
//! visit a node twice, two different moments of the story would claim the same key, and a
//! replay would answer the second with what the first recorded. A loop that is only *meant*
//! to be left (a fork that can go back) would also let a walk run forever, and a task whose
//! length has no bound cannot promise to finish. So the graph must be acyclic: every walk is
//! finite, every node is played at most once per line, and its keys are unique. A story that
//! wants to revisit a place writes a second node for it. Side stories may be played more than
//! once (each time an action is taken), which is why their keys carry a run prefix instead.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::ops::Deref;

use super::format::{Continuation, Effects, Node, Story};
use super::svg;

/// A story that passed every check: the only kind a [`Walk`](super::Walk) tells.
#[derive(Clone, Debug)]
pub struct ValidStory {
    story: Story,
    index: HashMap<String, usize>,
}

impl ValidStory {
    /// Checks `story` against every rule; all problems at once when it breaks any.
    pub fn new(story: Story) -> Result<Self, Vec<Problem>> {
        let problems = check(&story);
        if !problems.is_empty() {
            return Err(problems);
        }
        let index = story
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| (node.id.clone(), i))
            .collect();
        Ok(ValidStory { story, index })
    }

    /// The node with this id (every id a valid story names exists).
    pub fn node(&self, id: &str) -> &Node {
        &self.story.nodes[self.index[id]]
    }
}

impl Deref for ValidStory {
    type Target = Story;

    fn deref(&self) -> &Story {
        &self.story
    }
}

/// Where a problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The story's header (its top-level fields).
    Header,
    /// The node with this id.
    Node(String),
    /// The standing action with this id.
    Action(String),
    /// The scene with this id.
    Scene(String),
    /// The sprite with this id.
    Sprite(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Header => write!(f, "story header"),
            Location::Node(id) => write!(f, "node `{id}`"),
            Location::Action(id) => write!(f, "standing action `{id}`"),
            Location::Scene(id) => write!(f, "scene `{id}`"),
            Location::Sprite(id) => write!(f, "sprite `{id}`"),
        }
    }
}

/// One broken rule, where it is broken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The node (or action, scene, sprite, header) at fault.
    pub location: Location,
    /// The field at fault, as a path inside the location, e.g. `then.fork.options[1].goto`.
    pub field: String,
    /// What is wrong.
    pub kind: ProblemKind,
}

/// What is wrong, with what the author needs to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// An id that is not lowercase words joined by `-`.
    BadId {
        /// The id.
        id: String,
    },
    /// Two things of one kind share an id.
    DuplicateId {
        /// Which kind: `node`, `phase`, `action`, `option`, `ending`.
        what: &'static str,
        /// The shared id.
        id: String,
    },
    /// A reference to a node that does not exist.
    DanglingTarget {
        /// The missing node's id.
        target: String,
    },
    /// A node that neither the start nor any standing action leads to.
    Unreachable,
    /// A node from which no ending or `return` can be reached.
    DeadEnd,
    /// A loop in the graph (see the module docs for why none is allowed).
    Cycle {
        /// The nodes around the loop, the first repeated at the end.
        path: Vec<String>,
    },
    /// A scene that the story's `scenes` does not define.
    UnknownScene {
        /// The scene's id.
        id: String,
    },
    /// A sprite that the story's `sprites` does not define.
    UnknownSprite {
        /// The sprite's id.
        id: String,
    },
    /// A phase that the story's `phases` does not define.
    UnknownPhase {
        /// The phase's id.
        id: String,
    },
    /// A resource that the story's `resources` does not define.
    UnknownResource {
        /// The resource's name.
        name: String,
    },
    /// A fork with a timeout and no fallback.
    TimedForkWithoutFallback,
    /// A fork with a fallback and no timeout.
    FallbackWithoutTimeout,
    /// A fork with a timeout of 0.
    ZeroTimeout,
    /// A fork or roll with nothing to choose from.
    NothingToChoose,
    /// A roll branch whose weight is not more than 0.
    BadWeight,
    /// A fork in a side story (side stories run between beats and cannot wait for input).
    ForkInSideStory {
        /// The action whose side story it is.
        action: String,
    },
    /// A side story that leads onto the main line.
    SideStoryReachesMainLine {
        /// The action whose side story it is.
        action: String,
        /// The main-line node it reaches.
        node: String,
    },
    /// A `return` on the main line, which has no side story to end.
    ReturnOnMainLine,
    /// A progress over 100 percent.
    ProgressOver100 {
        /// The value given.
        value: u8,
    },
    /// A sprite on a node with no beat to show it with.
    SpriteWithoutBeat,
    /// A story with no phase.
    NoPhases,
    /// A scene or sprite that is not safe to inline into a page.
    UnsafeSvg {
        /// What is unsafe and what to remove.
        reason: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, `{}`: ", self.location, self.field)?;
        match &self.kind {
            ProblemKind::BadId { id } => write!(
                f,
                "`{id}` is not a valid id; use lowercase letters and digits in words joined by `-`, e.g. `north-gate`"
            ),
            ProblemKind::DuplicateId { what, id } => {
                write!(
                    f,
                    "another {what} already has the id `{id}`; rename one of them"
                )
            }
            ProblemKind::DanglingTarget { target } => write!(
                f,
                "goes to `{target}`, which is no node of the story; add a node `{target}` or fix the id"
            ),
            ProblemKind::Unreachable => write!(
                f,
                "nothing leads to this node, neither from `start` nor from a standing action; point a `goto` at it or remove it"
            ),
            ProblemKind::DeadEnd => write!(
                f,
                "no ending (and no `return`) can be reached from this node; give every path out of it an ending"
            ),
            ProblemKind::Cycle { path } => write!(
                f,
                "closes the loop {}; stories must be acyclic, so write a new node instead of going back",
                path.join(" → ")
            ),
            ProblemKind::UnknownScene { id } => {
                write!(f, "names the scene `{id}`, which `scenes` does not define")
            }
            ProblemKind::UnknownSprite { id } => {
                write!(
                    f,
                    "names the sprite `{id}`, which `sprites` does not define"
                )
            }
            ProblemKind::UnknownPhase { id } => {
                write!(f, "names the phase `{id}`, which `phases` does not define")
            }
            ProblemKind::UnknownResource { name } => write!(
                f,
                "names the resource `{name}`, which `resources` does not define; add it there with a starting amount"
            ),
            ProblemKind::TimedForkWithoutFallback => write!(
                f,
                "a fork with `timeout_ms` needs a `fallback`: the node played when time runs out"
            ),
            ProblemKind::FallbackWithoutTimeout => write!(
                f,
                "a `fallback` is only taken when time runs out; add `timeout_ms` or remove the fallback"
            ),
            ProblemKind::ZeroTimeout => {
                write!(
                    f,
                    "a timeout of 0 ms leaves no time to answer; give at least 1"
                )
            }
            ProblemKind::NothingToChoose => write!(f, "is empty; give at least one"),
            ProblemKind::BadWeight => write!(f, "a branch's weight must be more than 0"),
            ProblemKind::ForkInSideStory { action } => write!(
                f,
                "this node is part of the side story of action `{action}`, which plays between beats and cannot ask; use a roll or `next` instead"
            ),
            ProblemKind::SideStoryReachesMainLine { action, node } => write!(
                f,
                "the side story of action `{action}` leads to `{node}` on the main line; end it with `\"then\": \"return\"` instead"
            ),
            ProblemKind::ReturnOnMainLine => write!(
                f,
                "`return` ends a side story, but this node is on the main line; use an ending or `next`"
            ),
            ProblemKind::ProgressOver100 { value } => {
                write!(f, "{value} is more than 100 percent")
            }
            ProblemKind::SpriteWithoutBeat => write!(
                f,
                "a sprite is shown with the node's first beat, and this node has none; add a beat"
            ),
            ProblemKind::NoPhases => write!(f, "a story needs at least one phase"),
            ProblemKind::UnsafeSvg { reason } => write!(f, "the SVG {reason}"),
        }
    }
}

impl std::error::Error for Problem {}

/// Collects problems as the checks go.
struct Problems(Vec<Problem>);

impl Problems {
    fn push(&mut self, location: &Location, field: impl Into<String>, kind: ProblemKind) {
        self.0.push(Problem {
            location: location.clone(),
            field: field.into(),
            kind,
        });
    }
}

/// Every problem of `story`, in the order header, actions, pictures, nodes, graph.
fn check(story: &Story) -> Vec<Problem> {
    let mut problems = Problems(Vec::new());
    check_header(story, &mut problems);
    check_pictures(story, &mut problems);
    for node in &story.nodes {
        check_node(story, node, &mut problems);
    }
    check_graph(story, &mut problems);
    problems.0
}

/// Whether `id` is lowercase words of letters and digits joined by single `-`. Such ids never
/// contain `:` or `#`, which the walk's journal keys use as separators.
fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && id.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Reports bad and duplicate ids among `ids` (each with its location and field).
fn check_ids<'a>(
    what: &'static str,
    ids: impl IntoIterator<Item = (Location, String, &'a str)>,
    problems: &mut Problems,
) {
    let mut seen = BTreeSet::new();
    for (location, field, id) in ids {
        if !is_kebab(id) {
            problems.push(
                &location,
                field.clone(),
                ProblemKind::BadId { id: id.to_owned() },
            );
        }
        if !seen.insert(id) {
            let kind = ProblemKind::DuplicateId {
                what,
                id: id.to_owned(),
            };
            problems.push(&location, field, kind);
        }
    }
}

fn check_header(story: &Story, problems: &mut Problems) {
    let header = Location::Header;
    if !is_kebab(&story.id) {
        problems.push(
            &header,
            "id",
            ProblemKind::BadId {
                id: story.id.clone(),
            },
        );
    }
    if story.phases.is_empty() {
        problems.push(&header, "phases", ProblemKind::NoPhases);
    }
    let phases = story.phases.iter().enumerate();
    let phases = phases.map(|(i, p)| (Location::Header, format!("phases[{i}].id"), p.id.as_str()));
    check_ids("phase", phases, problems);
    for name in story.resources.keys() {
        if !is_kebab(name) {
            let kind = ProblemKind::BadId { id: name.clone() };
            problems.push(&header, format!("resources.{name}"), kind);
        }
    }
    if !story.scenes.contains_key(&story.default_scene) {
        let kind = ProblemKind::UnknownScene {
            id: story.default_scene.clone(),
        };
        problems.push(&header, "default_scene", kind);
    }
    if !has_node(story, &story.start) {
        let kind = ProblemKind::DanglingTarget {
            target: story.start.clone(),
        };
        problems.push(&header, "start", kind);
    }
    let actions = story.actions.iter();
    let actions = actions.map(|a| {
        (
            Location::Action(a.id.clone()),
            "id".to_owned(),
            a.id.as_str(),
        )
    });
    check_ids("action", actions, problems);
    for action in &story.actions {
        if !has_node(story, &action.goto) {
            let kind = ProblemKind::DanglingTarget {
                target: action.goto.clone(),
            };
            problems.push(&Location::Action(action.id.clone()), "goto", kind);
        }
    }
}

fn check_pictures(story: &Story, problems: &mut Problems) {
    check_svgs(&story.scenes, Location::Scene, problems);
    check_svgs(&story.sprites, Location::Sprite, problems);
}

fn check_svgs(
    pictures: &BTreeMap<String, String>,
    location: fn(String) -> Location,
    problems: &mut Problems,
) {
    for (id, svg) in pictures {
        let location = location(id.clone());
        if !is_kebab(id) {
            problems.push(&location, "id", ProblemKind::BadId { id: id.clone() });
        }
        for reason in svg::unsafe_parts(svg) {
            problems.push(&location, "svg", ProblemKind::UnsafeSvg { reason });
        }
    }
}

fn has_node(story: &Story, id: &str) -> bool {
    story.nodes.iter().any(|node| node.id == id)
}

fn check_effects(
    story: &Story,
    at: &Location,
    field: &str,
    effects: &Effects,
    problems: &mut Problems,
) {
    for name in effects.keys() {
        if !story.resources.contains_key(name) {
            let kind = ProblemKind::UnknownResource { name: name.clone() };
            problems.push(at, format!("{field}.{name}"), kind);
        }
    }
}

fn check_node(story: &Story, node: &Node, problems: &mut Problems) {
    let at = Location::Node(node.id.clone());
    if let Some(scene) = &node.scene
        && !story.scenes.contains_key(scene)
    {
        problems.push(
            &at,
            "scene",
            ProblemKind::UnknownScene { id: scene.clone() },
        );
    }
    if let Some(sprite) = &node.sprite {
        if !story.sprites.contains_key(sprite) {
            problems.push(
                &at,
                "sprite",
                ProblemKind::UnknownSprite { id: sprite.clone() },
            );
        }
        if node.beats.is_empty() {
            problems.push(&at, "sprite", ProblemKind::SpriteWithoutBeat);
        }
    }
    if let Some(phase) = &node.phase
        && !story.phases.iter().any(|p| &p.id == phase)
    {
        problems.push(
            &at,
            "phase",
            ProblemKind::UnknownPhase { id: phase.clone() },
        );
    }
    if let Some(value) = node.progress
        && value > 100
    {
        problems.push(&at, "progress", ProblemKind::ProgressOver100 { value });
    }
    check_effects(story, &at, "effects", &node.effects, problems);
    if let Some(gate) = &node.gate
        && !story.resources.contains_key(&gate.resource)
    {
        let kind = ProblemKind::UnknownResource {
            name: gate.resource.clone(),
        };
        problems.push(&at, "gate.resource", kind);
    }
    for (field, target) in node.targets() {
        if !has_node(story, target) {
            let kind = ProblemKind::DanglingTarget {
                target: target.to_owned(),
            };
            problems.push(&at, field, kind);
        }
    }
    match &node.then {
        Continuation::Fork(fork) => {
            if fork.options.is_empty() {
                problems.push(&at, "then.fork.options", ProblemKind::NothingToChoose);
            }
            let options = fork.options.iter().enumerate().map(|(i, option)| {
                (
                    at.clone(),
                    format!("then.fork.options[{i}].id"),
                    option.id.as_str(),
                )
            });
            check_ids("option", options, problems);
            for (i, option) in fork.options.iter().enumerate() {
                let field = format!("then.fork.options[{i}].effects");
                check_effects(story, &at, &field, &option.effects, problems);
            }
            match (fork.timeout_ms, &fork.fallback) {
                (Some(_), None) => {
                    problems.push(
                        &at,
                        "then.fork.timeout_ms",
                        ProblemKind::TimedForkWithoutFallback,
                    );
                }
                (None, Some(_)) => {
                    problems.push(
                        &at,
                        "then.fork.fallback",
                        ProblemKind::FallbackWithoutTimeout,
                    );
                }
                (Some(0), Some(_)) => {
                    problems.push(&at, "then.fork.timeout_ms", ProblemKind::ZeroTimeout);
                }
                _ => {}
            }
        }
        Continuation::Roll(roll) => {
            if roll.branches.is_empty() {
                problems.push(&at, "then.roll.branches", ProblemKind::NothingToChoose);
            }
            for (i, branch) in roll.branches.iter().enumerate() {
                if branch.weight == 0 {
                    problems.push(
                        &at,
                        format!("then.roll.branches[{i}].weight"),
                        ProblemKind::BadWeight,
                    );
                }
                let field = format!("then.roll.branches[{i}].effects");
                check_effects(story, &at, &field, &branch.effects, problems);
            }
        }
        Continuation::Ending(_) | Continuation::Next { .. } | Continuation::Return => {}
    }
}

/// The graph checks: duplicate node and ending ids, reachability, side-story scope, dead ends
/// and cycles. Edges to missing nodes were reported already and are left out here.
fn check_graph(story: &Story, problems: &mut Problems) {
    let nodes = story.nodes.iter();
    let ids = nodes.map(|n| (Location::Node(n.id.clone()), "id".to_owned(), n.id.as_str()));
    check_ids("node", ids, problems);
    let endings = story.nodes.iter().filter_map(|n| match &n.then {
        Continuation::Ending(ending) => Some((
            Location::Node(n.id.clone()),
            "then.ending.id".to_owned(),
            ending.id.as_str(),
        )),
        _ => None,
    });
    check_ids("ending", endings, problems);

    let graph = Graph::new(story);
    let main = graph.reach(&story.start);
    let mut sides = BTreeSet::new();
    for action in &story.actions {
        let side = graph.reach(&action.goto);
        check_side_story(story, &graph, &action.id, &side, &main, problems);
        sides.extend(side);
    }
    for node in &story.nodes {
        let at = Location::Node(node.id.clone());
        let id = node.id.as_str();
        if !main.contains(id) && !sides.contains(id) {
            problems.push(&at, "id", ProblemKind::Unreachable);
        }
        if main.contains(id) && matches!(node.then, Continuation::Return) {
            problems.push(&at, "then", ProblemKind::ReturnOnMainLine);
        }
    }
    let finishing = graph.finishing();
    for node in &story.nodes {
        if !finishing.contains(node.id.as_str()) {
            problems.push(
                &Location::Node(node.id.clone()),
                "then",
                ProblemKind::DeadEnd,
            );
        }
    }
    graph.cycles(problems);
}

/// Reports forks in the side story `side` of `action`, and its edges onto the main line.
fn check_side_story(
    story: &Story,
    graph: &Graph<'_>,
    action: &str,
    side: &BTreeSet<&str>,
    main: &BTreeSet<&str>,
    problems: &mut Problems,
) {
    let entry = story.actions.iter().find(|a| a.id == action);
    if let Some(entry) = entry
        && main.contains(entry.goto.as_str())
    {
        let kind = ProblemKind::SideStoryReachesMainLine {
            action: action.to_owned(),
            node: entry.goto.clone(),
        };
        problems.push(&Location::Action(action.to_owned()), "goto", kind);
    }
    for &id in side {
        if main.contains(id) {
            continue;
        }
        let node = graph.nodes[id];
        let at = Location::Node(id.to_owned());
        if matches!(node.then, Continuation::Fork(_)) {
            let kind = ProblemKind::ForkInSideStory {
                action: action.to_owned(),
            };
            problems.push(&at, "then.fork", kind);
        }
        for (field, target) in graph.edges(id) {
            if main.contains(target) {
                let kind = ProblemKind::SideStoryReachesMainLine {
                    action: action.to_owned(),
                    node: target.to_owned(),
                };
                problems.push(&at, field, kind);
            }
        }
    }
}

/// The story as a graph over its existing nodes (the first node of a duplicated id wins).
struct Graph<'s> {
    order: Vec<&'s str>,
    nodes: BTreeMap<&'s str, &'s Node>,
}

impl<'s> Graph<'s> {
    fn new(story: &'s Story) -> Self {
        let mut nodes = BTreeMap::new();
        let mut order = Vec::new();
        for node in &story.nodes {
            if !nodes.contains_key(node.id.as_str()) {
                nodes.insert(node.id.as_str(), node);
                order.push(node.id.as_str());
            }
        }
        Graph { order, nodes }
    }

    /// The edges out of `id` to existing nodes, each with the field that names the target.
    fn edges(&self, id: &str) -> Vec<(String, &'s str)> {
        let Some(node) = self.nodes.get(id) else {
            return Vec::new();
        };
        node.targets()
            .into_iter()
            .filter(|(_, target)| self.nodes.contains_key(target))
            .collect()
    }

    /// Every node reachable from `from` (itself included), empty when it does not exist.
    fn reach(&self, from: &str) -> BTreeSet<&'s str> {
        let mut seen = BTreeSet::new();
        let Some((&first, _)) = self.nodes.get_key_value(from) else {
            return seen;
        };
        let mut stack = vec![first];
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(self.edges(id).into_iter().map(|(_, target)| target));
            }
        }
        seen
    }

    /// The nodes from which an ending or a `return` can be reached. A node with an edge to a
    /// missing node counts as one (that edge was reported already; no need to say it twice).
    fn finishing(&self) -> BTreeSet<&'s str> {
        let mut done: BTreeSet<&str> = BTreeSet::new();
        loop {
            let before = done.len();
            for (&id, node) in &self.nodes {
                let terminal = matches!(node.then, Continuation::Ending(_) | Continuation::Return);
                let targets = node.targets();
                let dangling = targets.iter().any(|(_, t)| !self.nodes.contains_key(t));
                if terminal || dangling || targets.iter().any(|(_, t)| done.contains(t)) {
                    done.insert(id);
                }
            }
            if done.len() == before {
                return done;
            }
        }
    }

    /// Reports every edge that closes a loop (a depth-first search's back edges), at the node
    /// the edge leaves, with the loop's path.
    fn cycles(&self, problems: &mut Problems) {
        #[derive(Clone, Copy, PartialEq)]
        enum Colour {
            White,
            Grey,
            Black,
        }
        let mut colour: BTreeMap<&str, Colour> =
            self.order.iter().map(|&id| (id, Colour::White)).collect();
        for &root in &self.order {
            if colour[root] != Colour::White {
                continue;
            }
            // Each frame: a node on the current path and its edges not yet followed.
            let mut path: Vec<(&str, std::vec::IntoIter<(String, &str)>)> =
                vec![(root, self.edges(root).into_iter())];
            colour.insert(root, Colour::Grey);
            while let Some((id, edges)) = path.last_mut() {
                let id = *id;
                match edges.next() {
                    Some((field, target)) => match colour[target] {
                        Colour::White => {
                            colour.insert(target, Colour::Grey);
                            path.push((target, self.edges(target).into_iter()));
                        }
                        Colour::Grey => {
                            let from = path.iter().position(|(n, _)| *n == target).unwrap_or(0);
                            let mut ids: Vec<String> =
                                path[from..].iter().map(|(n, _)| (*n).to_owned()).collect();
                            ids.push(target.to_owned());
                            let kind = ProblemKind::Cycle { path: ids };
                            problems.push(&Location::Node(id.to_owned()), field, kind);
                        }
                        Colour::Black => {}
                    },
                    None => {
                        colour.insert(id, Colour::Black);
                        path.pop();
                    }
                }
            }
        }
    }
}
