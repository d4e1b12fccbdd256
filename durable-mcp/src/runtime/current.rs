//! Which task's body is being polled on this thread, so that a `#[step]` fn called from it
//! finds its context without taking one as a parameter.
//!
//! The driver marks its context current for exactly the duration of each poll of the body and
//! restores the previous value afterwards (also when the poll panics); a step's closure is
//! polled with no context current. Bodies of different
//! tasks interleave between polls, never inside one, so the mark is always the task whose code
//! is running; a future polled elsewhere (a spawned task) sees no context.

use std::cell::RefCell;
use std::rc::Rc;

use super::context::TaskContext;

thread_local! {
    static CURRENT: RefCell<Option<Rc<TaskContext>>> = const { RefCell::new(None) };
}

/// The context of the task whose body this thread is polling, if any.
pub fn current_context() -> Option<Rc<TaskContext>> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Runs `poll` with `cx` marked current.
pub(crate) fn while_current<R>(cx: &Rc<TaskContext>, poll: impl FnOnce() -> R) -> R {
    marked(Some(Rc::clone(cx)), poll)
}

/// Runs `poll` with no context current: a step's closure runs outside its task, so that a
/// `#[step]` fn called inside it simply runs.
pub(crate) fn without_current<R>(poll: impl FnOnce() -> R) -> R {
    marked(None, poll)
}

/// Runs `poll` with `mark` as the current context, and restores the previous one afterwards
/// (also when `poll` panics).
fn marked<R>(mark: Option<Rc<TaskContext>>, poll: impl FnOnce() -> R) -> R {
    struct Restore(Option<Rc<TaskContext>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|current| *current.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|current| std::mem::replace(&mut *current.borrow_mut(), mark));
    let _restore = Restore(previous);
    poll()
}
