// Compiles every tool's inputSchema and outputSchema (a tools/list result on
// stdin) with Ajv's JSON Schema 2020-12 validator in strict mode, as clients
// that validate arguments and results do, and checks that each inputSchema
// refuses an unknown field.
// Prints one line per problem; exits 1 if there is any.
import Ajv2020 from 'ajv/dist/2020.js';

const input = await new Promise((resolve) => {
  let text = '';
  process.stdin.on('data', (chunk) => { text += chunk; });
  process.stdin.on('end', () => resolve(text));
});
const { tools } = JSON.parse(input);
const ajv = new Ajv2020({ strict: true, allErrors: true });
const problems = [];
for (const tool of tools) {
  try {
    const validate = ajv.compile(tool.inputSchema);
    // An unknown field is refused, as the server refuses it.
    if (validate({ noSuchField: 1 })) problems.push(`${tool.name}: accepts an unknown field`);
  } catch (error) {
    problems.push(`${tool.name}: ${error.message}`);
  }
  if (tool.outputSchema) {
    try {
      ajv.compile(tool.outputSchema);
    } catch (error) {
      problems.push(`${tool.name} output: ${error.message}`);
    }
  }
}
for (const problem of problems) console.log(problem);
console.log(`${tools.length} tools, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
