// A Node.js client of placement.v1.PlacementSolver: loads our .proto with @grpc/proto-loader
// and solves an instance file through the server. Prints the response as JSON on stdout.
//
//   node solve_client.js PROTO_ROOT HOST:PORT INSTANCE.json
const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [protoRoot, target, instanceFile] = process.argv.slice(2);
const definition = protoLoader.loadSync(path.join("placement", "v1", "service.proto"), {
  includeDirs: [protoRoot],
  keepCase: true, // our files use the proto field names (snake_case)
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
});
const v1 = grpc.loadPackageDefinition(definition).placement.v1;
const client = new v1.PlacementSolver(target, grpc.credentials.createInsecure());
const instance = JSON.parse(fs.readFileSync(instanceFile, "utf8"));
const deadline = new Date(Date.now() + 60000);
client.Solve(
  { instance, parameters: { time_limit_s: 10 }, request_id: "node-client" },
  { deadline },
  (err, response) => {
    if (err) {
      console.error(`error: ${err.code} ${err.details}`);
      process.exit(1);
    }
    console.log(JSON.stringify(response));
    client.close();
  }
);
