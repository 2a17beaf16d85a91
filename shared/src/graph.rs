//! Ordering the tasks of a DAG: one ordering for a DAG file being checked
//! and a stored DAG being drawn, so the two never disagree.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// `names` in an order where every parent comes before its children and,
/// among the tasks ready at each point, the one listed first in `names`
/// comes first (so a grid reads in the file's order, layer by layer), given
/// `edges` as `(parent, child)` names (edges naming a task not in `names`
/// are ignored), or the tasks of one cycle, in cycle order.
pub fn topological_order<'a>(
    names: &[&'a str],
    edges: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<String>, Vec<String>> {
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    let mut in_degree = vec![0usize; names.len()];
    for (parent, child) in edges {
        if let (Some(&parent), Some(&child)) = (index.get(parent), index.get(child)) {
            children[parent].push(child);
            in_degree[child] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..names.len())
        .filter(|&i| in_degree[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(names.len());
    while let Some(Reverse(node)) = ready.pop() {
        order.push(names[node].to_owned());
        for &child in &children[node] {
            in_degree[child] -= 1;
            if in_degree[child] == 0 {
                ready.push(Reverse(child));
            }
        }
    }
    if order.len() == names.len() {
        return Ok(order);
    }
    // Walk forward from a node left with parents, staying among such
    // nodes; the walk must revisit a node, and the loop it closes is a cycle.
    let stuck = |i: usize| in_degree[i] > 0;
    let mut seen_at: HashMap<usize, usize> = HashMap::new();
    let mut path = Vec::new();
    let mut node = (0..names.len()).find(|&i| stuck(i)).unwrap_or(0);
    loop {
        if let Some(&start) = seen_at.get(&node) {
            let mut cycle: Vec<String> = path[start..]
                .iter()
                .map(|&i: &usize| names[i].to_owned())
                .collect();
            cycle.push(names[node].to_owned());
            return Err(cycle);
        }
        seen_at.insert(node, path.len());
        path.push(node);
        match children[node].iter().copied().find(|&c| stuck(c)) {
            Some(next) => node = next,
            None => return Err(vec![names[node].to_owned()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_tasks_keep_the_order_they_are_listed_in() {
        // Two layers of three, listed in file order: roots first, in order,
        // then their children in order, though each child is ready as soon
        // as its own parent is out.
        let names = ["ods_a", "ods_b", "ods_c", "stg_a", "stg_b", "stg_c"];
        let edges = [("ods_a", "stg_a"), ("ods_b", "stg_b"), ("ods_c", "stg_c")];
        let order = topological_order(&names, edges).expect("no cycle");
        assert_eq!(order, names);
        // The diamond: the two middle tasks in the order they are listed.
        let names = ["extract", "clean", "enrich", "report"];
        let edges = [
            ("extract", "clean"),
            ("extract", "enrich"),
            ("clean", "report"),
            ("enrich", "report"),
        ];
        assert_eq!(topological_order(&names, edges).expect("no cycle"), names);
    }

    #[test]
    fn parents_come_first_and_a_cycle_is_named() {
        let order = topological_order(&["c", "b", "a"], [("a", "b"), ("b", "c")]);
        assert_eq!(order, Ok(vec!["a".into(), "b".into(), "c".into()]));
        let cycle = topological_order(&["a", "b"], [("a", "b"), ("b", "a")]);
        assert!(
            matches!(cycle, Err(ref tasks) if tasks.len() == 3),
            "{cycle:?}"
        );
    }
}
