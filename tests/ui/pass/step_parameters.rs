// Checks: step parameters may be borrowed, owned, several, or `mut`; the output may be any
// Serialize + DeserializeOwned type.
use durable_mcp::{StepError, step};
use futures_util::FutureExt;

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Greeting {
    text: String,
}

#[step]
async fn greet(name: &str, mut times: u32, suffix: String) -> Result<Greeting, StepError> {
    let mut text = String::new();
    while times > 0 {
        text.push_str(name);
        times -= 1;
    }
    text.push_str(&suffix);
    Ok(Greeting { text })
}

#[step]
async fn nothing() -> Result<(), StepError> {
    Ok(())
}

fn main() {
    let name = String::from("ab");
    let greeting = greet(&name, 2, "!".to_owned()).now_or_never();
    let expected = Greeting {
        text: "abab!".to_owned(),
    };
    assert_eq!(greeting, Some(Ok(expected)));
    assert_eq!(nothing().now_or_never(), Some(Ok(())));
}
