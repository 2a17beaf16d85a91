//! `dj.event.>`: an external event becomes a fire for each DAG of its
//! project whose active event schedule names it.

use async_nats::jetstream;
use chrono::Utc;
use datajump_nats::Bus;
use datajump_shared::TriggerType;
use datajump_shared::messages::{EventPayload, FireMsg, VERSION};
use tracing::info;

use crate::{Config, Settlement};

/// Publishes a fire per active event schedule of the event's project bound
/// to its name, with the event's JSON object as run parameters and its
/// `biz_date`, if it names one, as the runs' business date.
pub(crate) async fn handle_event(
    config: &Config,
    bus: &Bus,
    message: &jetstream::Message,
) -> Settlement {
    let Some((project, name)) = bus.names().parse_event(message.subject.as_str()) else {
        return Settlement::Poison("not an event subject".to_owned());
    };
    let sequence = message
        .info()
        .map(|i| i.stream_sequence)
        .unwrap_or_default();
    let event = match EventPayload::parse(&message.payload) {
        Ok(event) => event,
        Err(e) => return Settlement::Poison(e.to_string()),
    };
    let schedules = match datajump_store::catalog::event_schedules(&config.db, project, name).await
    {
        Ok(schedules) => schedules,
        Err(e) => return e.into(),
    };
    let now = Utc::now();
    for (schedule, priority) in schedules {
        let tz =
            datajump_cron::parse_time_zone(&schedule.timezone).unwrap_or(config.default_timezone);
        let fire = FireMsg {
            v: VERSION,
            dag_id: schedule.dag_id,
            priority,
            schedule_id: Some(schedule.id),
            trigger_type: TriggerType::Event,
            logical_time: now,
            time_zone: schedule.timezone.clone(),
            biz_date: event.biz_date.unwrap_or_else(|| {
                datajump_shared::biz_date::biz_date_for(now, tz, schedule.biz_date_offset_days)
            }),
            dedup_key: datajump_shared::messages::event_run_key(schedule.id, sequence),
            params: event.params.clone(),
            max_active_runs: None,
        };
        if let Err(e) = bus.publish_fire(&fire).await {
            return e.into();
        }
        info!(
            event = name,
            project,
            dag_id = schedule.dag_id,
            "event fired a DAG"
        );
    }
    Settlement::Ack
}
