//! The Prometheus HTTP API's JSON, decoded into typed results. Pure: bytes in, values out.
//!
//! Every answer is an envelope `{status, data, errorType, error, warnings, infos}`
//! ([`decode`]): `success` gives an [`ApiResponse`] with its warnings kept (Thanos reports
//! partial responses only as a warning), `error` gives [`PromError::Api`] with the typed
//! [`ErrorType`]. Sample values are strings (`"1.5"`, `"NaN"`, `"+Inf"`), read by [`value`].

use super::PromError;
use llmscope_core::safe::{ERROR_TEXT_KEPT, excerpt, redact};
use llmscope_core::series::{Labels, Point, SeriesKey};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// A successful answer: the data plus what the server warned about.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiResponse<T> {
    pub data: T,
    /// E.g. Thanos partial responses, PromQL annotations.
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
    /// Points the server answered that the request did not ask for (outside the range, off its
    /// step grid's count, repeated or out of order), dropped by the client: a hostile or broken
    /// server's extra data never reaches a diagnosis.
    pub dropped: u64,
}

/// `errorType` of an error envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorType {
    BadData,
    Execution,
    Timeout,
    Canceled,
    Internal,
    Unavailable,
    NotFound,
    NotAcceptable,
    Other(String),
}

impl ErrorType {
    fn parse(s: &str) -> ErrorType {
        match s {
            "bad_data" => ErrorType::BadData,
            "execution" => ErrorType::Execution,
            "timeout" => ErrorType::Timeout,
            "canceled" => ErrorType::Canceled,
            "internal" => ErrorType::Internal,
            "unavailable" => ErrorType::Unavailable,
            "not_found" => ErrorType::NotFound,
            "not_acceptable" => ErrorType::NotAcceptable,
            other => ErrorType::Other(other.to_owned()),
        }
    }
}

impl std::fmt::Display for ErrorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            ErrorType::BadData => "bad_data",
            ErrorType::Execution => "execution",
            ErrorType::Timeout => "timeout",
            ErrorType::Canceled => "canceled",
            ErrorType::Internal => "internal",
            ErrorType::Unavailable => "unavailable",
            ErrorType::NotFound => "not_found",
            ErrorType::NotAcceptable => "not_acceptable",
            ErrorType::Other(s) => s,
        };
        f.write_str(s)
    }
}

#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    data: Option<T>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    infos: Vec<String>,
}

/// Decodes an envelope whose data is a `T`.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<ApiResponse<T>, PromError> {
    let env: Envelope<T> = serde_json::from_slice(body).map_err(|e| PromError::Decode {
        why: format!("not a Prometheus API answer ({e})"),
    })?;
    if env.status != "success" {
        return Err(PromError::Api {
            error_type: ErrorType::parse(env.error_type.as_deref().unwrap_or("")),
            // Upstream words may echo the token or the tenant (issue 17).
            message: env.error.map_or_else(
                || "no error message".into(),
                |e| redact(&excerpt(&e, ERROR_TEXT_KEPT)).into_owned(),
            ),
        });
    }
    let data = env.data.ok_or_else(|| PromError::Decode {
        why: "`status: success` without `data`".into(),
    })?;
    Ok(ApiResponse {
        data,
        warnings: env
            .warnings
            .iter()
            .map(|w| redact(w).into_owned())
            .collect(),
        infos: env.infos.iter().map(|w| redact(w).into_owned()).collect(),
        dropped: 0,
    })
}

/// A sample value as the API writes it: `"1.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`.
pub fn value(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => text.parse().ok().filter(|v: &f64| v.is_finite()),
    }
}

/// `[t, "v"]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RawPoint(pub f64, pub String);

impl RawPoint {
    fn point(&self) -> Result<Point, PromError> {
        let v = value(&self.1).ok_or_else(|| PromError::Decode {
            why: format!("sample value `{}` is not a number", self.1),
        })?;
        Ok(Point { t: self.0, v })
    }
}

/// One series of a range query, as sent; its values are read straight into points (a day of a
/// fleet is millions of `[t, "v"]` pairs: no string is kept per sample).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RawRangeSeries {
    pub metric: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "points")]
    pub values: Vec<Point>,
}

/// `[t, "v"]` with the value borrowed from the body where it can be.
#[derive(Deserialize)]
struct BorrowedPoint<'a>(f64, #[serde(borrow)] std::borrow::Cow<'a, str>);

/// Reads `[[t, "v"], …]` into points; a value that is not a number is an error naming it.
fn points<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Point>, D::Error> {
    struct Pairs;
    impl<'de> serde::de::Visitor<'de> for Pairs {
        type Value = Vec<Point>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of [time, \"value\"] pairs")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Point>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
            while let Some(BorrowedPoint(t, text)) = seq.next_element()? {
                let v = value(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!("sample value `{text}` is not a number"))
                })?;
                out.push(Point { t, v });
            }
            // Held for the rest of the read: give back what doubling left over.
            out.shrink_to_fit();
            Ok(out)
        }
    }
    d.deserialize_seq(Pairs)
}

/// One sample of an instant vector, as sent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RawInstant {
    pub metric: BTreeMap<String, String>,
    pub value: RawPoint,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "resultType", content = "result", rename_all = "lowercase")]
pub enum RawQueryData {
    Matrix(Vec<RawRangeSeries>),
    Vector(Vec<RawInstant>),
    Scalar(RawPoint),
    String(RawPoint),
}

/// The result of an instant query.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryData {
    /// One point per series.
    Vector(Vec<(SeriesKey, Point)>),
    /// A range-vector selector (`m[5m]`) evaluated at an instant.
    Matrix(Vec<llmscope_core::series::Series>),
    Scalar(Point),
    String {
        t: f64,
        value: String,
    },
}

/// The series key of an API label set (`__name__` becomes the name).
pub fn key(metric: &BTreeMap<String, String>) -> SeriesKey {
    let name = metric.get("__name__").cloned().unwrap_or_default();
    let labels = metric
        .iter()
        .filter(|(k, _)| *k != "__name__")
        .map(|(k, v)| (k.clone(), v.clone()));
    SeriesKey::new(name, Labels::new(labels))
}

impl RawRangeSeries {
    pub fn into_series(self) -> Result<llmscope_core::series::Series, PromError> {
        Ok(llmscope_core::series::Series {
            key: key(&self.metric),
            points: self.values,
        })
    }
}

impl RawQueryData {
    pub fn into_data(self) -> Result<QueryData, PromError> {
        Ok(match self {
            RawQueryData::Matrix(m) => QueryData::Matrix(
                m.into_iter()
                    .map(RawRangeSeries::into_series)
                    .collect::<Result<_, _>>()?,
            ),
            RawQueryData::Vector(v) => QueryData::Vector(
                v.iter()
                    .map(|s| Ok((key(&s.metric), s.value.point()?)))
                    .collect::<Result<_, PromError>>()?,
            ),
            RawQueryData::Scalar(p) => QueryData::Scalar(p.point()?),
            RawQueryData::String(p) => QueryData::String { t: p.0, value: p.1 },
        })
    }
}

/// `/api/v1/metadata` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MetricMetadata {
    #[serde(rename = "type")]
    pub metric_type: String,
    #[serde(default)]
    pub help: String,
    #[serde(default)]
    pub unit: String,
}

/// `/api/v1/targets` data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Targets {
    #[serde(rename = "activeTargets", default)]
    pub active: Vec<ActiveTarget>,
    #[serde(rename = "droppedTargets", default)]
    pub dropped: Vec<serde_json::Value>,
}

/// One scraped target as Prometheus sees it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveTarget {
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub scrape_pool: String,
    #[serde(default)]
    pub scrape_url: String,
    /// `up`, `down` or `unknown`.
    #[serde(default)]
    pub health: String,
    #[serde(default)]
    pub last_error: String,
    #[serde(default)]
    pub last_scrape_duration: f64,
}

/// `/api/v1/status/buildinfo` data.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BuildInfo {
    pub version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_values_including_specials() {
        assert_eq!(value("1.5"), Some(1.5));
        assert!(value("NaN").unwrap().is_nan());
        assert_eq!(value("+Inf"), Some(f64::INFINITY));
        assert_eq!(value("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(value("1e3"), Some(1000.0));
        assert_eq!(value("abc"), None);
        assert_eq!(value("inf"), None, "only Prometheus' spellings");
    }

    #[test]
    fn range_results_decode_with_warnings() {
        let body = br#"{"status":"success","warnings":["partial response: store X down"],
          "data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"vllm:num_requests_waiting","pod":"a","engine":"0"},
             "values":[[1700000000,"16"],[1700000001.5,"NaN"]]}]}}"#;
        let r: ApiResponse<RawQueryData> = decode(body).unwrap();
        assert_eq!(r.warnings, ["partial response: store X down"]);
        let QueryData::Matrix(m) = r.data.into_data().unwrap() else {
            panic!("matrix")
        };
        assert_eq!(
            m[0].key.to_string(),
            r#"vllm:num_requests_waiting{engine="0",pod="a"}"#
        );
        assert_eq!(m[0].points[0], Point { t: 1.7e9, v: 16.0 });
        assert!(m[0].points[1].v.is_nan());
    }

    #[test]
    fn instant_vector_scalar_and_string() {
        let v = br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up"},"value":[5,"1"]}]}}"#;
        let QueryData::Vector(v) = decode::<RawQueryData>(v).unwrap().data.into_data().unwrap()
        else {
            panic!("vector")
        };
        assert_eq!(v[0].1, Point { t: 5.0, v: 1.0 });
        let s = br#"{"status":"success","data":{"resultType":"scalar","result":[5,"+Inf"]}}"#;
        let d = decode::<RawQueryData>(s).unwrap().data.into_data().unwrap();
        assert_eq!(
            d,
            QueryData::Scalar(Point {
                t: 5.0,
                v: f64::INFINITY
            })
        );
        let s = br#"{"status":"success","data":{"resultType":"string","result":[5,"hi"]}}"#;
        let d = decode::<RawQueryData>(s).unwrap().data.into_data().unwrap();
        assert_eq!(
            d,
            QueryData::String {
                t: 5.0,
                value: "hi".into()
            }
        );
    }

    #[test]
    fn error_envelopes_are_typed() {
        let body = br#"{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error"}"#;
        match decode::<RawQueryData>(body).unwrap_err() {
            PromError::Api {
                error_type,
                message,
            } => {
                assert_eq!(error_type, ErrorType::BadData);
                assert!(message.contains("parse error"));
            }
            other => panic!("{other:?}"),
        }
        let weird = br#"{"status":"error","errorType":"quota"}"#;
        assert!(matches!(
            decode::<RawQueryData>(weird).unwrap_err(),
            PromError::Api {
                error_type: ErrorType::Other(_),
                ..
            }
        ));
    }

    #[test]
    fn garbage_and_bad_values_are_decode_errors() {
        assert!(matches!(
            decode::<RawQueryData>(b"<html>"),
            Err(PromError::Decode { .. })
        ));
        let bad = br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}"#;
        let err = decode::<RawQueryData>(bad).unwrap_err();
        assert!(matches!(err, PromError::Decode { .. }), "{err}");
        assert!(err.to_string().contains("`x`"), "{err}");
        // A value the server escaped is still read (it cannot be borrowed from the body).
        let escaped = br#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1\u002e5"],[2,"NaN"]]}]}}"#;
        let QueryData::Matrix(m) = decode::<RawQueryData>(escaped)
            .unwrap()
            .data
            .into_data()
            .unwrap()
        else {
            panic!("a matrix")
        };
        assert_eq!(m[0].points[0], Point { t: 1.0, v: 1.5 });
        assert!(m[0].points[1].v.is_nan());
    }

    #[test]
    fn metadata_and_targets_decode() {
        let md = br#"{"status":"success","data":{"vllm:e2e_request_latency_seconds":[{"type":"histogram","help":"e2e","unit":""}]}}"#;
        let r: ApiResponse<BTreeMap<String, Vec<MetricMetadata>>> = decode(md).unwrap();
        assert_eq!(
            r.data["vllm:e2e_request_latency_seconds"][0].metric_type,
            "histogram"
        );
        let t = br#"{"status":"success","data":{"activeTargets":[{"labels":{"job":"vllm"},"scrapePool":"vllm","scrapeUrl":"http://x/metrics","health":"up","lastError":"","lastScrapeDuration":0.01}],"droppedTargets":[]}}"#;
        let r: ApiResponse<Targets> = decode(t).unwrap();
        assert_eq!(r.data.active[0].health, "up");
        assert_eq!(r.data.active[0].labels["job"], "vllm");
    }
}
