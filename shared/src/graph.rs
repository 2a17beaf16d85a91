//! Ordering the tasks of a DAG: one ordering for a DAG file being checked
//! and a stored DAG being drawn, so the two never disagree.

use std::collections::HashMap;

/// `names` in an order where every parent comes before its children, given
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
    let mut ready: Vec<usize> = (0..names.len()).filter(|&i| in_degree[i] == 0).collect();
    let mut order = Vec::with_capacity(names.len());
    while let Some(node) = ready.pop() {
        order.push(names[node].to_owned());
        for &child in &children[node] {
            in_degree[child] -= 1;
            if in_degree[child] == 0 {
                ready.push(child);
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
