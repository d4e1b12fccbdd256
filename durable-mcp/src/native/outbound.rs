//! The native host's requests to authorization servers: ureq's blocking client, run on
//! tokio's blocking threads so that a slow authorization server never stalls a worker's other
//! connections.

use std::time::Duration;

use super::clock::SystemClock;
use crate::auth::outbound::{FETCH_TIMEOUT, Fetched, MAX_FETCHED, Outbound};
use crate::core::Timestamp;
use crate::runtime::{Clock, LocalBoxFuture};

/// ureq over rustls, with the web's root certificates.
pub(crate) struct NativeOutbound {
    agent: ureq::Agent,
}

impl NativeOutbound {
    pub(crate) fn new() -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(FETCH_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .new_agent();
        NativeOutbound { agent }
    }

    async fn run(
        &self,
        request: impl FnOnce(&ureq::Agent) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>
        + Send
        + 'static,
    ) -> Result<Fetched, String> {
        let agent = self.agent.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let mut response = request(&agent).map_err(|error| error.to_string())?;
            let status = response.status().as_u16();
            let body = (response
                .body_mut()
                .with_config()
                .limit(MAX_FETCHED as u64)
                .read_to_vec())
            .map_err(|error| error.to_string())?;
            Ok(Fetched { status, body })
        });
        // A blocking thread outlives a dropped request; the agent's own timeout ends it.
        match tokio::time::timeout(FETCH_TIMEOUT + Duration::from_secs(1), answer).await {
            Ok(Ok(fetched)) => fetched,
            Ok(Err(error)) => Err(format!("the request failed: {error}")),
            Err(_) => Err("the authorization server did not answer in time".to_owned()),
        }
    }
}

impl Outbound for NativeOutbound {
    fn get<'a>(&'a self, url: &'a str) -> LocalBoxFuture<'a, Result<Fetched, String>> {
        let target = url.to_owned();
        Box::pin(async move {
            self.run(move |agent| {
                agent
                    .get(&target)
                    .header("accept", "application/json")
                    .call()
            })
            .await
            .map_err(|error| format!("GET {url}: {error}"))
        })
    }

    fn post_form<'a>(
        &'a self,
        url: &'a str,
        form: String,
        authorization: Option<String>,
    ) -> LocalBoxFuture<'a, Result<Fetched, String>> {
        let target = url.to_owned();
        Box::pin(async move {
            self.run(move |agent| {
                let mut request = agent
                    .post(&target)
                    .header("accept", "application/json")
                    .header("content-type", "application/x-www-form-urlencoded");
                if let Some(authorization) = authorization {
                    request = request.header("authorization", authorization);
                }
                request.send(form)
            })
            .await
            .map_err(|error| format!("POST {url}: {error}"))
        })
    }

    fn now(&self) -> Timestamp {
        SystemClock.now()
    }
}
