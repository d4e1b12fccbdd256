//! The Worker's requests to authorization servers: the platform's `fetch`, given up after
//! [`FETCH_TIMEOUT`] so that a hung authorization server answers 503 rather than holding the
//! request.

use futures_util::future::{Either, select};
use worker::{Delay, Fetch, Headers, Method, Request, RequestInit};

use super::ports::JsClock;
use crate::auth::outbound::{FETCH_TIMEOUT, Fetched, MAX_FETCHED, Outbound};
use crate::core::Timestamp;
use crate::runtime::{Clock, LocalBoxFuture};

/// `fetch`, and `Date.now()`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WorkerOutbound;

impl WorkerOutbound {
    async fn send(
        method: Method,
        url: &str,
        form: Option<String>,
        authorization: Option<String>,
    ) -> Result<Fetched, String> {
        let attempt = async {
            let headers = Headers::new();
            headers.set("accept", "application/json")?;
            if let Some(authorization) = &authorization {
                headers.set("authorization", authorization)?;
            }
            let mut init = RequestInit::new();
            if let Some(form) = form {
                headers.set("content-type", "application/x-www-form-urlencoded")?;
                init.with_body(Some(form.into()));
            }
            init.with_method(method).with_headers(headers);
            let mut response = Fetch::Request(Request::new_with_init(url, &init)?)
                .send()
                .await?;
            let status = response.status_code();
            let body = response.bytes().await?;
            Ok::<_, worker::Error>(Fetched { status, body })
        };
        let attempt = std::pin::pin!(attempt);
        match select(attempt, Delay::from(FETCH_TIMEOUT)).await {
            Either::Left((Ok(fetched), _)) if fetched.body.len() <= MAX_FETCHED => Ok(fetched),
            Either::Left((Ok(_), _)) => {
                Err(format!("{url} answered more than {MAX_FETCHED} bytes"))
            }
            Either::Left((Err(error), _)) => Err(format!("{url}: {error}")),
            Either::Right(_) => Err(format!("{url} did not answer within {FETCH_TIMEOUT:?}")),
        }
    }
}

impl Outbound for WorkerOutbound {
    fn get<'a>(&'a self, url: &'a str) -> LocalBoxFuture<'a, Result<Fetched, String>> {
        Box::pin(WorkerOutbound::send(Method::Get, url, None, None))
    }

    fn post_form<'a>(
        &'a self,
        url: &'a str,
        form: String,
        authorization: Option<String>,
    ) -> LocalBoxFuture<'a, Result<Fetched, String>> {
        Box::pin(WorkerOutbound::send(
            Method::Post,
            url,
            Some(form),
            authorization,
        ))
    }

    fn now(&self) -> Timestamp {
        JsClock.now()
    }
}
