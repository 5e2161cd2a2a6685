-- The span -> agent-trace map as SQL over the Collector ClickHouse exporter's otel_traces
-- columns: one row per agent trace. Written once; traces/sqlmap.py expands the @macros for
-- DuckDB or ClickHouse (traces/_sql_dialect.py) and finishes each row with the Python rules
-- (traces/convert.py and the modules it calls). Each CTE names the Python rule it copies.
WITH raw AS @inline() (
    SELECT TraceId AS tid, SpanId AS sid, ParentSpanId AS pid, SpanName AS name,
           @ns(Timestamp) AS start_ns, CAST(Duration AS BIGINT) AS dur, SpanAttributes AS a,
           '|' || @keystr(SpanAttributes) || '|' AS k
    FROM @source()
    WHERE SpanName <> 'spanguard.annotate' AND SpanName <> 'spanguard.log' @window()
),
-- identity.is_agent_span, _llm.is_llm_span, identity.tool_name (the span's role)
roles AS @inline() (
    SELECT tid, sid, pid, name, start_ns, start_ns + dur AS end_ns, a, k,
        (@val(a; 'gen_ai.operation.name') = 'invoke_agent'
            OR @val(a; 'openinference.span.kind') = 'AGENT'
            OR @val(a; 'traceloop.span.kind') IN ('workflow', 'agent')) AS is_agent,
        (@val(a; 'gen_ai.operation.name') IN ('chat', 'text_completion', 'generate_content', 'completion')
            OR @val(a; 'openinference.span.kind') = 'LLM'
            OR @val(a; 'llm.request.type') IN ('chat', 'completion')) AS is_llm,
        (@val(a; 'mcp.method.name') = 'tools/call') AS is_mcp,
        (@val(a; 'mcp.method.name') = 'tools/call'
            OR @val(a; 'gen_ai.operation.name') = 'execute_tool'
            OR @val(a; 'openinference.span.kind') = 'TOOL'
            OR @val(a; 'traceloop.span.kind') = 'tool') AS is_tool,
        @has(a; 'spanguard.request.id') AS has_request,
        -- identity.conversation_key: what joins the parentless model calls of one turn
        COALESCE(
            CASE WHEN @val(a; 'gen_ai.conversation.id') <> '' THEN 'gen_ai.conversation.id=' || @val(a; 'gen_ai.conversation.id') END,
            CASE WHEN @val(a; 'session.id') <> '' THEN 'session.id=' || @val(a; 'session.id') END,
            CASE WHEN @val(a; 'langfuse.session.id') <> '' THEN 'langfuse.session.id=' || @val(a; 'langfuse.session.id') END,
            CASE WHEN @val(a; 'mcp.session.id') <> '' THEN 'mcp.session.id=' || @val(a; 'mcp.session.id') END,
            CASE WHEN @prefix(k; 'traceloop.association.properties.') THEN 'traceloop=' || @pick(a; 'traceloop.association.properties.') END
        ) AS ckey
    FROM raw
),
named AS @inline() (
    SELECT *,
        CASE WHEN is_tool THEN COALESCE(
            @nonblank(a; 'gen_ai.tool.name'), @nonblank(a; 'tool.name'),
            @nonblank(a; 'mcp.tool.name'), @nonblank(a; 'traceloop.entity.name'),
            NULLIF(@trim(CASE WHEN @starts(n2; 'execute_tool') THEN substring(n2, 13) ELSE n2 END), ''),
            NULLIF(name, ''), 'tool') END AS tool,
        -- identity._spanguard_identity, per span (root first, then the others earliest first)
        NULLIF(@val(a; 'spanguard.seed_id'), '') AS seed,
        NULLIF(@val(a; 'spanguard.variant_id'), '') AS variant,
        CASE WHEN @digits(@val(a; 'spanguard.repeat')) THEN @int(@val(a; 'spanguard.repeat')) ELSE 0 END AS rep,
        CASE WHEN @prefix(k; 'spanguard.assignment.') THEN @pick(a; 'spanguard.assignment.') END AS asg,
        CASE WHEN @prefix(k; 'spanguard.assignment.') THEN @label(a; 'spanguard.assignment.') END AS asg_label,
        -- identity.sender: user.id, enduser.id, langfuse.user.id; session.id, langfuse.session.id, gen_ai.conversation.id
        COALESCE(@nonblank(a; 'user.id'), @nonblank(a; 'enduser.id'), @nonblank(a; 'langfuse.user.id')) AS usr,
        COALESCE(@nonblank(a; 'session.id'), @nonblank(a; 'langfuse.session.id'), @nonblank(a; 'gen_ai.conversation.id')) AS ses,
        -- identity.cost: spanguard.cost_usd, else llm.cost.total (finished by finite_number)
        CASE WHEN @float(@val(a; 'spanguard.cost_usd')) IS NOT NULL THEN @get(a; 'spanguard.cost_usd') ELSE @get(a; 'llm.cost.total') END AS cost,
        -- _llm.llm_call reads these keys of a model call (typed back and read by the same rule)
        CASE WHEN is_llm THEN @keys(a; 'gen_ai.provider.name', 'gen_ai.system', 'llm.provider', 'llm.system', 'gen_ai.request.model', 'llm.invocation_parameters', 'gen_ai.response.model', 'llm.model_name', 'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt', 'gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens', 'llm.token_count.completion', 'gen_ai.response.finish_reasons', 'llm.finish_reason', 'spanguard.cost_usd', 'llm.cost.total') END AS llm_attrs,
        -- _documents.span_documents (GenAI form)
        @get(a; 'gen_ai.retrieval.documents') AS docs,
        -- identity.sources: the conventions the spans were recorded with
        CASE WHEN @prefix(k; 'gen_ai.') THEN 1 ELSE 0 END AS src_gen_ai,
        CASE WHEN @has(a; 'openinference.span.kind') OR @prefix(k; 'retrieval.documents.') THEN 1 ELSE 0 END AS src_oi,
        CASE WHEN @prefix(k; 'traceloop.') THEN 1 ELSE 0 END AS src_traceloop,
        CASE WHEN @prefix(k; 'langfuse.') THEN 1 ELSE 0 END AS src_langfuse,
        CASE WHEN @prefix(k; 'spanguard.') THEN 1 ELSE 0 END AS src_spanguard,
        -- the rules this map leaves to Python: the trace is converted from its spans instead
        CASE WHEN @prefix(k; 'langfuse.') OR @prefix(k; 'traceloop.association.properties.') OR @has(a; 'metadata')
              OR (@prefix(k; 'retrieval.documents.') AND NOT @has(a; 'gen_ai.retrieval.documents'))
              OR (is_llm AND (@like(k; 'tool_call') OR @like(k; 'function_call')
                  OR @contains(@val(a; 'gen_ai.output.messages'); 'tool')))
             THEN 1 ELSE 0 END AS py_span,
        -- the root's own fields, read on the root only (identity.find_root: grk = 1)
        @get(a; 'spanguard.request.id') AS r_request,
        CASE WHEN @has(a; 'input.value') THEN 'input.value' WHEN @has(a; 'traceloop.entity.input') THEN 'traceloop.entity.input'
             WHEN @has(a; 'gen_ai.input.messages') THEN 'gen_ai.input.messages' END AS r_input_key,
        CASE WHEN @has(a; 'output.value') THEN 'output.value' WHEN @has(a; 'traceloop.entity.output') THEN 'traceloop.entity.output'
             WHEN @has(a; 'gen_ai.output.messages') THEN 'gen_ai.output.messages' END AS r_output_key,
        COALESCE(@get(a; 'input.value'), @get(a; 'traceloop.entity.input'), @get(a; 'gen_ai.input.messages')) AS r_input,
        COALESCE(@get(a; 'output.value'), @get(a; 'traceloop.entity.output'), @get(a; 'gen_ai.output.messages')) AS r_output,
        @get(a; 'spanguard.cost_usd') AS r_cost,
        CASE WHEN @prefix(k; 'spanguard.metadata.') THEN @pick(a; 'spanguard.metadata.') END AS r_metadata,
        @has(a; 'spanguard.repeat') AS has_rep
    FROM (
        SELECT *, CASE WHEN is_mcp AND @starts(n1; 'tools/call') THEN substring(n1, 11) ELSE n1 END AS n2
        FROM (SELECT *, CASE WHEN is_mcp AND @starts(name; 'MCP send ') THEN substring(name, 10) ELSE name END AS n1 FROM roles) AS r1
    ) AS r2
),
-- the per-span values without the attribute map (the CTE the next two read)
slim AS @inline() (
    SELECT @but(named; a, k, n1, n2) FROM named
),
-- identity.find_root per trace (parentless within the trace; agent spans first, then the
-- earliest: the least @key), its first span, and (convert.traces_from_records) the
-- conversation a trace joins when its root is a parentless model or tool call and it has no
-- agent or spanguard request span. Aggregates, not window functions: no sort of the spans.
turns AS (
    SELECT tid, rkey, @field(rkey; i) AS rsid, first_sid, redelivered,
        CASE WHEN @field(rkey; p) = '' AND @field(rkey; r) = 1 AND agentish = 0 THEN conv0 END AS conv
    FROM (
        -- a span is a candidate when its parent is not among the trace's span ids; a span id
        -- delivered twice (a retry) counts once in Python (convert.traces_from_records): such
        -- a trace is left to the span conversion (redelivered = 1)
        SELECT tid, @root(spans; sids) AS rkey, agentish, conv0, first_sid,
            CASE WHEN length(sids) <> @distinct_n(sids) THEN 1 ELSE 0 END AS redelivered
        FROM (
            SELECT tid, @ids(sid) AS sids,
                @spans(pid; NOT is_agent; start_ns; sid; CASE WHEN is_llm OR is_tool THEN 1 ELSE 0 END) AS spans,
                MAX(CASE WHEN is_agent OR has_request THEN 1 ELSE 0 END) AS agentish,
                @first(ckey; @key(start_ns; sid); ckey IS NOT NULL) AS conv0,
                @first(sid; @key(start_ns; sid); TRUE) AS first_sid
            FROM slim GROUP BY tid
        ) AS l
    ) AS t
),
tgroups AS (
    SELECT tid AS ttid, rkey, rsid, first_sid, redelivered, COALESCE(conv, tid) AS tgid FROM turns
),
-- the root of each (merged) agent trace: the least root of its traces
groots AS (
    SELECT tgid AS ggid, @first(ttid; rkey; TRUE) AS g_tid, @first(rsid; rkey; TRUE) AS g_sid
    FROM tgroups GROUP BY tgid
),
grouped AS (
    SELECT c.*, t.tgid AS gid,
        CASE WHEN c.tid = g.g_tid AND c.sid = g.g_sid THEN 1 ELSE 2 END AS grk,
        @key(c.start_ns; c.sid) AS pos,
        (c.sid = t.first_sid) AS tfirst, t.redelivered AS redelivered
    FROM slim AS c JOIN tgroups AS t ON t.ttid = c.tid JOIN groots AS g ON g.ggid = t.tgid
),
spans AS (
    SELECT *, @key(CASE WHEN grk = 1 THEN 0 ELSE 1 END; start_ns; sid) AS ipos FROM grouped
),
-- the spans' events, with the agent trace they belong to
-- (read from the source again, not from raw: a CTE read twice is materialised with its maps)
evspans AS (
    SELECT t.tgid AS gid, r.SpanId AS sid, r."Events.Timestamp" AS ev_t, r."Events.Name" AS ev_n,
           r."Events.Attributes" AS ev_a
    FROM @source() AS r JOIN tgroups AS t ON t.ttid = r.TraceId
    WHERE length(r."Events.Name") > 0 AND r.SpanName <> 'spanguard.annotate'
          AND r.SpanName <> 'spanguard.log' @window()
),
-- process.process_trace and process.outcome_of: events in time order
events AS (
    SELECT gid, en,
        @key(et; sid; ei) AS eo,
        NULLIF(@val(ea; 'spanguard.plan.step'), '') AS step,
        NULLIF(@val(ea; 'spanguard.friction.point'), '') AS point,
        NULLIF(@val(ea; 'spanguard.escalation.reason'), '') AS reason
    FROM (@events(evspans)) AS e
),
process AS (
    SELECT gid,
        @list(step; eo; en = 'spanguard.plan_step' AND step IS NOT NULL) AS plan_steps,
        @list(point; eo; en = 'spanguard.friction' AND point IS NOT NULL) AS friction,
        -- the lists' lengths, for queries that count (fairness/stats): no list is built
        SUM(CASE WHEN en = 'spanguard.plan_step' AND step IS NOT NULL THEN 1 ELSE 0 END) AS n_plan,
        SUM(CASE WHEN en = 'spanguard.friction' AND point IS NOT NULL THEN 1 ELSE 0 END) AS n_friction,
        MAX(CASE WHEN en = 'spanguard.escalation' THEN 1 ELSE 0 END) AS escalated,
        @first(reason; eo; en = 'spanguard.escalation' AND reason IS NOT NULL) AS escalation_reason,
        MAX(CASE WHEN @starts(en; 'spanguard.') THEN 1 ELSE 0 END) AS src_events,
        MAX(CASE WHEN @starts(en; 'gen_ai.') THEN 1 ELSE 0 END) AS py_events
    FROM events GROUP BY gid
),
traces AS (
    SELECT gid,
        -- the root's own fields (identity.find_root: grk = 1)
        @first(tid; grk; grk = 1) AS trace_id,
        @first(sid; grk; grk = 1) AS root_span_id,
        @first(pid; grk; grk = 1) AS root_parent,
        @first(start_ns; grk; grk = 1) AS root_start,
        @first(end_ns; grk; grk = 1) AS root_end,
        @first(r_request; grk; grk = 1) AS request_id,
        @first(r_input_key; grk; grk = 1) AS input_key,
        @first(r_output_key; grk; grk = 1) AS output_key,
        @first(r_input; grk; grk = 1) AS input_text,
        @first(r_output; grk; grk = 1) AS output_text,
        @first(r_cost; grk; grk = 1) AS root_cost,
        -- a root without spanguard.metadata.* has {} (as the span path's metadata), not NULL
        COALESCE(@first(r_metadata; grk; grk = 1), '{}') AS metadata,
        @first(seed; ipos; seed IS NOT NULL) AS seed_id,
        @first(variant; ipos; variant IS NOT NULL) AS variant_id,
        @first(asg; ipos; asg IS NOT NULL) AS assignments,
        COALESCE(@first(asg_label; ipos; asg IS NOT NULL), 'base') AS group_label,
        @first(rep; ipos; has_rep) AS repeat,
        @first(usr; ipos; usr IS NOT NULL) AS user_id,
        @first(ses; ipos; ses IS NOT NULL) AS session_id,
        @list(tool; pos; tool IS NOT NULL) AS tools,
        @list(docs; pos; docs IS NOT NULL) AS documents,
        @list(llm_attrs; pos; is_llm) AS llm_calls,
        SUM(CASE WHEN tool IS NOT NULL THEN 1 ELSE 0 END) AS n_tools,
        SUM(CASE WHEN docs IS NOT NULL THEN 1 ELSE 0 END) AS n_documents,
        SUM(CASE WHEN is_llm THEN 1 ELSE 0 END) AS n_llm,
        @list(CAST(start_ns AS VARCHAR); pos; is_llm) AS llm_starts,
        @list(CAST(end_ns AS VARCHAR); pos; is_llm) AS llm_ends,
        @list(cost; pos; cost IS NOT NULL) AS costs,
        COUNT(DISTINCT tid) AS trace_count,
        @list(tid; pos; tfirst) AS trace_ids,
        MIN(CASE WHEN pid = '' THEN start_ns END) AS top_start,
        MAX(CASE WHEN pid = '' THEN end_ns END) AS top_end,
        MAX(src_gen_ai) AS src_gen_ai, MAX(src_oi) AS src_oi, MAX(src_traceloop) AS src_traceloop,
        MAX(src_langfuse) AS src_langfuse, MAX(src_spanguard) AS src_sg,
        CASE WHEN MAX(py_span) = 1 OR MAX(redelivered) = 1 OR SUM(CASE WHEN is_llm THEN 1 ELSE 0 END) > 1
                  OR SUM(CASE WHEN is_mcp THEN 1 ELSE 0 END) > 0
                  OR SUM(CASE WHEN is_tool THEN 1 ELSE 0 END) > COUNT(DISTINCT tool)
                  OR MAX(CASE WHEN grk = 1 AND NOT has_request THEN 1 ELSE 0 END) = 1
             THEN 1 ELSE 0 END AS py_trace
    FROM spans GROUP BY gid
)
SELECT t.*,
    COALESCE(p.escalated, 0) AS escalated, p.plan_steps AS plan_steps, p.friction AS friction,
    COALESCE(p.n_plan, 0) AS n_plan, COALESCE(p.n_friction, 0) AS n_friction,
    p.escalation_reason AS escalation_reason,
    CASE WHEN t.src_sg = 1 OR COALESCE(p.src_events, 0) = 1 THEN 1 ELSE 0 END AS src_spanguard,
    CASE WHEN t.py_trace = 1 OR COALESCE(p.py_events, 0) = 1 THEN 1 ELSE 0 END AS python_rules
FROM traces AS t
LEFT JOIN process AS p ON p.gid = t.gid
@order()
@settings()
