//! The report's index.html: the findings in words and a table of contents, then (a campaign's
//! many labels) one table of every label × probe × load, the summary tables, a section per probe
//! (each run's figures folded), the monitors' watch, sysbench's price, then per label its
//! probes (not in a campaign's) and its system.

use std::fmt::Write;

use super::{distinct, file_safe};
use crate::model::SystemSnapshot;
use crate::report::findings::Finding;
use crate::report::page::figures::{load_name, Figure};
use crate::report::page::svg::esc;
use crate::report::page::tables;
use crate::report::select::RunView;
use crate::report::{Catalog, OpNote, ProbeNote};

const TEMPLATE: &str = include_str!("template.html");

/// The figures already drawn, placed on the page by name; a figure that was not drawn (a run
/// without an estimate has no tail) is simply left out.
#[derive(Clone, Copy)]
struct Drawn<'a>(&'a [Figure]);

impl<'a> Drawn<'a> {
    /// The figure `name` as HTML, or nothing when it was not drawn.
    fn html(self, name: &str) -> String {
        self.0.iter().find(|f| f.name == name).map(figure_html).unwrap_or_default()
    }

    /// Every figure whose name starts with `prefix`, in drawing order.
    fn starting(self, prefix: &str) -> Vec<&'a Figure> {
        self.0.iter().filter(|f| f.name.starts_with(prefix)).collect()
    }
}

/// One top-level section of the page: its anchor, its heading and what follows the heading.
struct Section {
    id: String,
    title: String,
    body: String,
}

impl Section {
    fn new(id: impl Into<String>, title: impl Into<String>, body: String) -> Section {
        Section { id: id.into(), title: title.into(), body }
    }
}

/// The whole page: the findings first, then a table of contents, then every section; `pngs`
/// of the figures have a PNG copy beside their SVG.
pub fn html(
    runs: &[RunView],
    costs: &[RunView],
    figs: &[Figure],
    pngs: usize,
    catalog: &Catalog,
    findings: &[Finding],
) -> String {
    let notes = &catalog.probes[..];
    let labels = distinct(runs.iter().chain(costs).map(|r| r.label().to_string()));
    let drawn = Drawn(figs);
    let campaign = super::campaign::is_campaign(distinct(runs.iter().map(|r| r.label().to_string())).len());
    let mut sections = Vec::new();
    if campaign {
        let title = "Every label, probe and load: the largest p99 first";
        sections.push(Section::new("labels", title, super::campaign::hosts_table(runs)));
    }
    sections.extend(summary(runs));
    for probe in distinct(runs.iter().map(|r| r.probe().to_string())) {
        let body = probe_section(runs, &probe, drawn, notes, campaign);
        sections.push(Section::new(format!("probe-{}", file_safe(&probe)), probe, body));
    }
    sections.extend(watch_section(drawn));
    sections.extend(price_section(costs, &catalog.ops, drawn));
    if !campaign {
        let per_label = labels.iter().map(|l| drawn.html(&format!("label-{}-probes", file_safe(l)))).collect();
        sections.push(Section::new("per-label", "Per label", per_label));
    }
    sections.push(Section::new("systems", "Systems", systems_section(runs, &labels)));
    let title = if campaign {
        format!("{} labels, {} to {}", labels.len(), labels[0], labels[labels.len() - 1])
    } else {
        labels.join(" vs ")
    };
    let mut b = heading(runs, &title, files_note(figs.len(), pngs, super::png::BUILT));
    // A campaign's first screen is its findings and its table of labels, then the contents.
    b.push_str(&crate::report::findings::html(findings, campaign));
    let (lead, rest) = sections.split_at(usize::from(campaign));
    let section = |s: &Section| format!(r#"<h2 id="{}">{}</h2>{}"#, esc(&s.id), esc(&s.title), s.body);
    b.extend(lead.iter().map(section));
    b.push_str(&contents(&sections));
    b.extend(rest.iter().map(section));
    TEMPLATE.replace("{{title}}", &esc(&format!("rtbench report: {title}"))).replace("{{body}}", &b)
}

/// The table of contents: a link to every section.
fn contents(sections: &[Section]) -> String {
    let items: String =
        sections.iter().map(|s| format!(r##"<li><a href="#{}">{}</a></li>"##, esc(&s.id), esc(&s.title))).collect();
    format!(r#"<nav class="toc"><h2>Contents</h2><ul class="toc">{items}</ul></nav>"#)
}

/// The title and what the page holds.
fn heading(runs: &[RunView], title: &str, files: String) -> String {
    let mut b = String::new();
    let _ = write!(b, "<h1>rtbench report: {}</h1>", esc(title));
    let _ = write!(
        b,
        r#"<p class="note">{} runs, generated {} by rtbench {}. Latencies in µs. {files} ⚠ marks a run with caveats (hover for them).</p>"#,
        runs.len(),
        crate::timefmt::now_rfc3339(),
        env!("CARGO_PKG_VERSION")
    );
    b
}

/// Which copies of the figures `figures/` holds: a report drawn by a command asked to stop has
/// no PNGs, or only some (issue 29), and must not promise them; a build without the `png`
/// feature draws none (`built` false).
fn files_note(figures: usize, pngs: usize, built: bool) -> String {
    let redraw = "<code>rtbench report</code> draws them";
    if !built {
        "Figures are also in <code>figures/</code> as SVG; this rtbench was built without their PNG copies (<code>--no-default-features</code>; a default build draws them).".into()
    } else if pngs >= figures {
        "Figures are also in <code>figures/</code> as SVG and PNG.".into()
    } else if pngs == 0 {
        format!("Figures are also in <code>figures/</code> as SVG; their PNG copies were skipped when the command was stopped ({redraw}).")
    } else {
        format!("Figures are also in <code>figures/</code> as SVG, {pngs} of the {figures} also as PNG; the other PNG copies were skipped when the command was stopped ({redraw}).")
    }
}

/// The tables over every latency run.
fn summary(runs: &[RunView]) -> Vec<Section> {
    vec![
        Section::new("summary", "Summary (Appendix III)", tables::appendix_iii(runs)),
        Section::new("percentiles", "Percentiles", tables::percentiles(runs)),
        Section::new("ipipe", "By kernel and load (I-pipe layout)", tables::ipipe(runs)),
        Section::new("rule-of-thumb", "Rule of thumb: worst case within 10⁵ CPU cycles", tables::rules(runs)),
    ]
}

/// One probe: what a sample is, its comparisons, the tails by label and, where runs were split,
/// each label's IRQ vs scheduling shares; each of its runs folded behind a `<details>`, so the
/// page stays readable with many runs.
fn probe_section(runs: &[RunView], probe: &str, drawn: Drawn, notes: &[ProbeNote], campaign: bool) -> String {
    let mut b = String::new();
    let these: Vec<&RunView> = runs.iter().filter(|r| r.probe() == probe).collect();
    let named = these.first().map_or(probe, |r| r.data.header.probe.as_str());
    let help = notes.iter().find(|p| p.name == named).map_or("", |p| p.help);
    let _ = write!(b, "<p class=\"note\">{}</p>", esc(help));
    for tag in ["bars", "percentiles", "nines", "classes"] {
        b.push_str(&drawn.html(&format!("{probe}-{tag}")));
    }
    for f in drawn.starting(&format!("{probe}-tails-")) {
        b.push_str(&figure_html(f));
    }
    b.push_str(&crate::report::page::split::section(runs, probe));
    let what = if campaign {
        "each run (its own figures: <code>rtbench report --label LABEL</code>)"
    } else {
        "each run's figures"
    };
    let _ = write!(b, "<details class=\"runs\"><summary>{what} ({} runs)</summary>", these.len());
    for r in these {
        b.push_str(&run_section(r, drawn));
    }
    b + "</details>"
}

/// One run: its figures, its breaches and its caveats.
fn run_section(r: &RunView, drawn: Drawn) -> String {
    let id = r.data.header.id;
    let mut b = String::new();
    let _ = write!(
        b,
        r#"<h3 id="run{id}">run {id} · {} · {}{}</h3>"#,
        esc(r.label()),
        esc(&load_name(&r.load())),
        tables::caveat(r)
    );
    b.push_str(&placement_html(r));
    for kind in ["histogram", "split", "scatter", "tail"] {
        b.push_str(&drawn.html(&format!("run{id}-{kind}")));
    }
    if !r.data.breaches.is_empty() {
        b.push_str(&tables::breaches(&r.data));
        for breach in &r.data.breaches {
            b.push_str(&drawn.html(&format!("run{id}-breach{}", breach.seq)));
        }
    }
    b.push_str(&warnings_html(r));
    b
}

/// Where each end of the run ran, as `show` says it (issue 22: a ping-pong's echo server on
/// the load's CPU doubled the median; the reader needs both ends' CPU and policy to see why).
fn placement_html(r: &RunView) -> String {
    let ends = crate::report::text::show::ends(&r.data);
    if ends.is_empty() {
        return String::new();
    }
    let ends: Vec<String> = ends.iter().map(|(end, placed)| format!("{}: {}", esc(end), esc(placed))).collect();
    format!(r#"<p class="note placement">where it ran: {}</p>"#, ends.join(" · "))
}

/// The monitors' long-term plots, when there are any.
fn watch_section(drawn: Drawn) -> Option<Section> {
    let watched = drawn.starting("monitor-");
    if watched.is_empty() {
        return None;
    }
    let mut b = String::new();
    b.push_str(r#"<p class="note">Every stored window of a monitor, its largest latency per CPU and, with <code>--split</code>, its largest IRQ latency (dashed, as rtla timerlat's IRQ maximum beside its thread maximum); retention (<code>--keep</code>) decides how far back.</p>"#);
    for f in watched {
        b.push_str(&figure_html(f));
    }
    Some(Section::new("watch", "Long-term watch (rtbench monitor)", b))
}

/// sysbench's costs per label and, where measured, the total time under each load.
fn price_section(costs: &[RunView], ops: &[OpNote], drawn: Drawn) -> Option<Section> {
    if costs.is_empty() {
        return None;
    }
    let mut b = String::new();
    b.push_str(r#"<p class="note">Median of the repetitions of each operation, one row per label; hover a value for its spread. rtbench's own implementation of LMbench's measurements.</p>"#);
    b.push_str(&drawn.html("sysbench-costs"));
    b.push_str(&tables::sysbench(costs, ops));
    let total = tables::sysbench_total(costs);
    if !total.is_empty() {
        b.push_str(
            r#"<h3 id="sysbench-total">Total time of the operations under each load (the I-pipe study's table)</h3>"#,
        );
        b.push_str(&total);
    }
    Some(Section::new("price", "The price of real time (LMbench layout, rtbench sysbench)", b))
}

/// Per label, the system of its newest latency run and that run's audit.
fn systems_section(runs: &[RunView], labels: &[String]) -> String {
    let mut b = String::new();
    for label in labels {
        if let Some(r) = runs.iter().rev().find(|r| r.label() == label) {
            b.push_str(&system_html(label, &r.data.header.system));
            if let Some(findings) = &r.data.header.system.audit {
                let id = r.data.header.id;
                let _ = write!(b, r#"<h4 id="audit-run{id}">audit of run {id} when it began</h4>"#);
                b.push_str(&tables::audit(findings));
            }
        }
    }
    b
}

fn figure_html(f: &Figure) -> String {
    format!(r#"<figure id="{}">{}<figcaption>{}</figcaption></figure>"#, f.name, f.svg, esc(&f.caption))
}

fn warnings_html(r: &RunView) -> String {
    let h = &r.data.header;
    let mut items: Vec<String> = h.warnings.clone();
    if let Some((_, verdict)) = tables::rule_of_thumb(r) {
        items.push(format!("rule of thumb: {verdict}"));
    }
    if let Some(act) = h.load.report().and_then(|l| l.activity.as_ref()) {
        let b: Vec<String> = act.cpu_busy_percent.iter().map(|v| v.to_string()).collect();
        items.push(format!(
            "load: CPUs busy {} %, {} context switches/s, {} interrupts/s",
            b.join(" / "),
            json(&act.context_switches_per_s),
            json(&act.interrupts_per_s)
        ));
    }
    if items.is_empty() {
        return String::new();
    }
    let lis: String = items.iter().map(|w| format!("<li>{}</li>", esc(w))).collect();
    format!(r#"<ul class="warnings">{lis}</ul>"#)
}

/// A value as JSON writes it (`null` when unknown), as the systems table has always shown them.
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn system_html(label: &str, sys: &SystemSnapshot) -> String {
    let mut rows = String::new();
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let throttling = &sys.rt_throttling;
    let fields: [(&str, String); 9] = [
        ("kernel", text(&sys.kernel_release)),
        // Kept since ARM kernels were measured: a run made before says nothing of it.
        ("architecture", sys.arch.clone().unwrap_or_default()),
        ("version", text(&sys.kernel_version)),
        ("preemption", sys.preemption.describe()),
        ("command line", text(&sys.cmdline)),
        ("CPU", format!("{} @ {} MHz", text(&sys.cpu_model), json(&sys.cpu_mhz))),
        ("CPUs online / isolated", format!("{} / {}", json(&sys.cpus_online), json(&sys.cpus_isolated))),
        ("clocksource", text(&sys.clocksource)),
        (
            "RT throttling",
            format!("{} µs per {} µs", json(&throttling.sched_rt_runtime_us), json(&throttling.sched_rt_period_us)),
        ),
    ];
    for (k, v) in fields.into_iter().filter(|(k, v)| *k != "architecture" || !v.is_empty()) {
        let _ = write!(rows, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    format!(r#"<h3>{}</h3><table class="sys">{rows}</table>"#, esc(label))
}

#[cfg(test)]
mod tests {
    use super::files_note;

    #[test]
    fn the_note_names_the_copies_that_are_there() {
        assert!(files_note(4, 4, true).contains("as SVG and PNG."));
        let some = files_note(4, 1, true);
        assert!(some.contains("as SVG, 1 of the 4 also as PNG") && !some.contains("SVG and PNG"), "{some}");
        let none = files_note(4, 0, true);
        assert!(none.contains("as SVG; their PNG copies were skipped") && !none.contains("SVG and PNG"), "{none}");
        let unbuilt = files_note(4, 0, false);
        assert!(unbuilt.contains("built without their PNG copies") && !unbuilt.contains("skipped"), "{unbuilt}");
    }
}
