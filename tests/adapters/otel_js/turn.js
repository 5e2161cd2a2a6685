// One agent turn instrumented by OpenTelemetry JS's @opentelemetry/instrumentation-openai
// (tests/adapters/test_otel_js.py).
// node turn.js OTLP_URL OPENAI_BASE_URL
const { NodeTracerProvider, SimpleSpanProcessor } = require("@opentelemetry/sdk-trace-node");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-proto");
const { registerInstrumentations } = require("@opentelemetry/instrumentation");
const { OpenAIInstrumentation } = require("@opentelemetry/instrumentation-openai");
const { trace } = require("@opentelemetry/api");

const [otlpUrl, baseURL] = process.argv.slice(2);
const provider = new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: otlpUrl }))],
});
provider.register();
registerInstrumentations({ instrumentations: [new OpenAIInstrumentation()] });
const OpenAI = require("openai");

const TOOLS = [{ type: "function", function: { name: "get_weather",
  description: "Current weather of a city.",
  parameters: { type: "object", properties: { city: { type: "string" } },
                required: ["city"] } } }];

async function main() {
  const client = new OpenAI({ baseURL, apiKey: "test-key", maxRetries: 0 });
  const tracer = trace.getTracer("weather-app");
  const answer = await tracer.startActiveSpan("weather turn", async (span) => {
    const messages = [{ role: "system", content: "You answer in one sentence." },
                      { role: "user", content: "Weather in Paris?" }];
    const first = await client.chat.completions.create({ model: "gpt-4o-mini", messages,
                                                         tools: TOOLS });
    const message = first.choices[0].message;
    messages.push(message);
    for (const call of message.tool_calls || []) {
      const { city } = JSON.parse(call.function.arguments);
      messages.push({ role: "tool", tool_call_id: call.id, content: `sunny, 21 °C in ${city}` });
    }
    const second = await client.chat.completions.create({ model: "gpt-4o-mini", messages,
                                                          tools: TOOLS });
    span.end();
    return second.choices[0].message.content;
  });
  await provider.shutdown();
  console.log(answer);
}
main().catch((err) => { console.error(err); process.exit(1); });
