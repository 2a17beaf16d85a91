//! `dj.dataset.>`: a producer's announcement that a dataset was written
//! becomes a recorded dataset event, which starts the data schedules it
//! completes (`datajump_engine::announce`).
//!
//! The stream also carries the events DataJump recorded itself (published
//! after their commits); those are read, found recorded, and acknowledged.
//! An announcement is recorded under its stream sequence, so a redelivery
//! after a crash records nothing twice.

use async_nats::jetstream;
use chrono::Utc;
use datajump_engine::Announcement;
use datajump_nats::Bus;
use datajump_shared::datasets::{self, Announced, EventSource, Written};
use datajump_shared::entities::dataset_event;
use datajump_shared::messages::DatasetEventMsg;
use sea_orm::EntityTrait;
use tracing::info;

use crate::{Config, Settlement};

/// Records a producer's announcement, or acknowledges a recorded event's
/// notice.
pub(crate) async fn handle_dataset(
    config: &Config,
    bus: &Bus,
    message: &jetstream::Message,
) -> Settlement {
    let Some(name) = bus.names().parse_dataset(message.subject.as_str()) else {
        return Settlement::Poison("not a dataset subject".to_owned());
    };
    if let Err(e) = datasets::validate_name(name) {
        return Settlement::Poison(e.to_string());
    }
    if let Some(recorded) = DatasetEventMsg::recorded(&message.payload) {
        return match dataset_event::Entity::find_by_id(recorded.id)
            .one(&config.db)
            .await
        {
            Ok(Some(_)) => Settlement::Ack,
            Ok(None) => Settlement::Poison(format!(
                "names dataset event {} that was never recorded; announce a dataset with {{\"partition\": …}}",
                recorded.id
            )),
            Err(e) => e.into(),
        };
    }
    let announced = match Announced::parse(&message.payload) {
        Ok(announced) => announced,
        Err(e) => return Settlement::Poison(e.to_string()),
    };
    let project_id = announced
        .project
        .unwrap_or(datajump_shared::dag_file::DEFAULT_PROJECT);
    match datajump_store::projects::find(&config.db, project_id).await {
        Ok(Some(_)) => {}
        Ok(None) => return Settlement::Poison(format!("no project with id {project_id}")),
        Err(e) => return e.into(),
    }
    let sequence = message
        .info()
        .map(|i| i.stream_sequence)
        .unwrap_or_default();
    let announcement = Announcement {
        project_id,
        written: Written {
            dataset: name.to_owned(),
            partition: announced.partition,
        },
        source: EventSource::Nats,
        dag_run_id: None,
        task_instance_id: None,
        metadata: announced.metadata,
        origin: Some(format!("nats:{sequence}")),
    };
    match datajump_engine::announce(&config.db, vec![announcement], Utc::now()).await {
        Ok((recorded, effects)) => {
            for event in &recorded {
                info!(dataset = %event.dataset, partition = event.partition.as_deref().unwrap_or(""), sequence, "dataset announced on NATS recorded");
            }
            // A fire lost here is sent again by the ticker.
            let _ = effects.publish(bus).await;
            Settlement::Ack
        }
        Err(e) => e.into(),
    }
}
