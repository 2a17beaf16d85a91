use super::*;
use std::collections::BTreeSet;

fn inputs() -> Inputs {
    Inputs {
        params: BTreeMap::from([("region".to_owned(), "eu".to_owned())]),
        biz_date: "2026-12-06".to_owned(),
        tasks: BTreeMap::from([(
            "count_new".to_owned(),
            TaskValues {
                status: "SUCCESS".to_owned(),
                outputs: BTreeMap::from([
                    ("rows".to_owned(), "12".to_owned()),
                    ("files".to_owned(), r#"["a.csv", "b.csv"]"#.to_owned()),
                ]),
            },
        )]),
    }
}

fn one(text: &str) -> Result<bool, EvalError> {
    Condition::parse(text).expect("parses");
    first_true(&[text], &inputs()).remove(0)
}

#[test]
fn conditions_read_params_dates_outputs_and_statuses() {
    assert_eq!(one("int(tasks.count_new.output.rows) > 0"), Ok(true));
    assert_eq!(one("tasks.count_new.output.rows > '2'"), Ok(false), "text");
    assert_eq!(
        one("params.region == 'eu' && biz_date >= '2026-12-01'"),
        Ok(true)
    );
    assert_eq!(one("tasks['count_new'].status == 'SUCCESS'"), Ok(true));
    assert_eq!(
        one("'b.csv' in json(tasks.count_new.output.files)"),
        Ok(true)
    );
    assert_eq!(
        one("json(tasks.count_new.output.files).exists(f, f.endsWith('.csv'))"),
        Ok(true)
    );
    assert_eq!(one("has(tasks.count_new.output.nope)"), Ok(false));
}

#[test]
fn a_missing_key_is_an_error_not_an_empty_string() {
    assert_eq!(
        one("tasks.count_new.output.nope == ''"),
        Err(EvalError::Missing {
            key: "nope".to_owned()
        })
    );
    assert!(
        matches!(one("int(params.region) > 1"), Err(EvalError::Failed(e)) if e.contains("int"))
    );
    assert_eq!(
        one("tasks.count_new.output.rows"),
        Err(EvalError::NotBool {
            found: "string".to_owned()
        })
    );
}

#[test]
fn the_first_true_case_wins_and_later_ones_are_not_evaluated() {
    let outcomes = first_true(
        &["params.region == 'us'", "params.region == 'eu'", "1/0 == 1"],
        &inputs(),
    );
    assert_eq!(outcomes, vec![Ok(false), Ok(true)]);
    let failed = first_true(&["1/0 == 1", "true"], &inputs());
    assert_eq!(failed.len(), 1);
    assert!(matches!(&failed[0], Err(EvalError::Failed(e)) if e.contains("zero")));
}

#[test]
fn reads_are_listed() {
    let condition = Condition::parse(
        "int(tasks.a.output.rows) > 0 && tasks['b-2'].status == 'FAILED' && params.x == '1' && 'k' in tasks.a.output",
    )
    .expect("parses");
    let reads = condition.reads();
    assert_eq!(reads.params, BTreeSet::from(["x".to_owned()]));
    assert!(!reads.biz_date && !reads.all_params);
    assert_eq!(
        reads.tasks["a"].outputs,
        BTreeSet::from(["rows".to_owned()])
    );
    assert!(reads.tasks["a"].all_outputs);
    assert!(reads.tasks["b-2"].status);
    let looped = Condition::parse("json(params.list).all(x, x > 1)").expect("parses");
    assert_eq!(looped.reads().params, BTreeSet::from(["list".to_owned()]));
}

#[test]
fn limits_are_checked_before_parsing() {
    let long = format!("'{}' == ''", "a".repeat(MAX_BYTES));
    assert!(matches!(
        Condition::parse(&long),
        Err(ConditionError::TooLong { .. })
    ));
    // Deep enough to overflow any stack if it reached the parser.
    let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(matches!(
        Condition::parse(&deep),
        Err(ConditionError::TooLong { .. })
    ));
    let seventeen = format!("{}1{} == 1", "[".repeat(17), "]".repeat(17));
    assert_eq!(
        Condition::parse(&seventeen),
        Err(ConditionError::TooDeep {
            depth: 17,
            column: 17
        })
    );
    let sixteen = format!("size({}1{}) == 1", "[".repeat(15), "]".repeat(15));
    assert!(Condition::parse(&sixteen).is_ok());
    // Brackets inside a string are text.
    assert!(Condition::parse(&format!("'{}' != ''", "(".repeat(40))).is_ok());
}

#[test]
fn the_longest_shapes_the_limits_allow_run_on_the_bounded_thread() {
    let sum = vec!["1"; MAX_BYTES / 2].join("+");
    let sum = format!("{} > 0", &sum[..sum.len() - 6]);
    assert_eq!(first_true(&[&sum], &inputs()), vec![Ok(true)]);
    let nots = format!("{}true", "!".repeat(MAX_BYTES - 4));
    assert_eq!(first_true(&[&nots], &inputs()), vec![Ok(true)]);
    let ternaries = format!("{}false", "true?false:".repeat(90));
    assert_eq!(first_true(&[&ternaries], &inputs()), vec![Ok(false)]);
    // Past the parser's own recursion limit: refused, not a crash.
    let ternaries = format!("{}1", "1?1:".repeat(250));
    assert!(matches!(
        Condition::parse(&ternaries),
        Err(ConditionError::Syntax { .. })
    ));
}

#[test]
fn what_a_condition_may_not_read_or_do_is_refused_with_its_column() {
    assert_eq!(
        Condition::parse("env.HOME == ''"),
        Err(ConditionError::UnknownName {
            name: "env".to_owned(),
            column: 1
        })
    );
    assert!(matches!(
        Condition::parse("size(tasks) > 0"),
        Err(ConditionError::TasksWhole { column: 6 })
    ));
    assert!(matches!(
        Condition::parse("tasks.a.retries > 1"),
        Err(ConditionError::TaskRead { ref what, .. }) if what == ".retries"
    ));
    assert!(matches!(
        Condition::parse("tasks.a == null"),
        Err(ConditionError::TaskRead { ref what, .. }) if what == "a whole"
    ));
    assert!(matches!(
        Condition::parse("[1,2].all(x, [3,4].exists(y, x < y))"),
        Err(ConditionError::NestedLoop { .. })
    ));
    assert!(matches!(
        Condition::parse("int(tasks.a.output.rows) >"),
        Err(ConditionError::Syntax { line: 1, .. })
    ));
}

#[test]
fn json_refuses_deep_documents() {
    let deep = format!(
        "{}1{}",
        "[".repeat(MAX_JSON_DEPTH + 1),
        "]".repeat(MAX_JSON_DEPTH + 1)
    );
    let mut values = inputs();
    values.params.insert("doc".to_owned(), deep);
    let outcome = first_true(&["size(json(params.doc)) == 1"], &values).remove(0);
    assert!(matches!(outcome, Err(EvalError::Failed(e)) if e.contains("nests 33 deep")));
    values.params.insert(
        "doc".to_owned(),
        r#"{"n": 3, "big": 18446744073709551615, "f": 1.5}"#.to_owned(),
    );
    assert_eq!(
        first_true(
            &["json(params.doc).n == 3 && json(params.doc).f > 1.0"],
            &values
        ),
        vec![Ok(true)]
    );
}
