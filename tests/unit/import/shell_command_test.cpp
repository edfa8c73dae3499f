#include "models/launch_args/shell_command.hpp"

#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"

using Catch::Matchers::Contains;
using namespace wallsim;
using namespace wallsim::models;

namespace {

std::vector<std::string> texts(const std::vector<ShellWord>& words) {
  std::vector<std::string> out;
  for (const auto& word : words) out.push_back(word.text);
  return out;
}

using Words = std::vector<std::string>;

}  // namespace

TEST_CASE("bare arguments are split as the shell splits them") {
  const LaunchCommand launch = read_launch_command(
      "--num-layers 32 --hidden-size=4096 \\\n"
      "  --moe-layer-freq '([0]*3+[1]*58)' --split \"99,1,0\"  # a comment\n"
      "--tokenizer-model a\\ b\n",
      "args.txt");
  CHECK(launch.script.empty());
  CHECK(texts(launch.arguments) == Words{"--num-layers", "32", "--hidden-size=4096",
                                         "--moe-layer-freq", "([0]*3+[1]*58)", "--split", "99,1,0",
                                         "--tokenizer-model", "a b"});
  CHECK(launch.arguments[0].line == 1);
  CHECK(launch.arguments.back().line == 3);
}

TEST_CASE("the launch line is the last command that runs a python script") {
  const LaunchCommand launch = read_launch_command(
      "python tools/preprocess.py --input x\n"
      "mkdir -p logs\n"
      "torchrun --nproc_per_node 8 --nnodes=2 pretrain_gpt.py --num-layers 2 2>&1 | tee log\n",
      "run.sh");
  CHECK(launch.script == "pretrain_gpt.py");
  CHECK(texts(launch.launcher) == Words{"torchrun", "--nproc_per_node", "8", "--nnodes=2"});
  // `2>&1` is a redirection (dropped); `| tee log` is another command.
  CHECK(texts(launch.arguments) == Words{"--num-layers", "2"});
}

TEST_CASE("variables, defaults and bash arrays expand with word splitting") {
  const LaunchCommand launch = read_launch_command(
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "TP=${TP:-2}\n"
      "NODES=${SLURM_NNODES:-\"1\"}\n"
      "EMPTY=\n"
      "MODEL_ARGS=(\n"
      "    --num-layers 32   # layers\n"
      "#   --swiglu\n"
      "    \"--fp8-format hybrid\"\n"
      ")\n"
      "MODEL_ARGS+=(--tensor-model-parallel-size $TP)\n"
      "QUOTED=(\"a b\" c)\n"
      "torchrun --nnodes $NODES pretrain_gpt.py ${MODEL_ARGS[@]} $EMPTY --x \"${QUOTED[@]}\" "
      "--y \"${QUOTED[*]}\" --z ${EMPTY:-fallback}\n",
      "run.sh");
  // Unquoted ${A[@]} splits each element ("--fp8-format hybrid" becomes two words), as bash
  // does; quoted "${A[@]}" keeps elements whole; "${A[*]}" joins them with a space; an unquoted
  // empty expansion is no word at all.
  CHECK(texts(launch.arguments) == Words{"--num-layers", "32", "--fp8-format", "hybrid",
                                         "--tensor-model-parallel-size", "2", "--x", "a b", "c",
                                         "--y", "a b c", "--z", "fallback"});
  CHECK(texts(launch.launcher) == Words{"torchrun", "--nnodes", "1"});
  for (const auto& word : launch.arguments) CHECK(word.unresolved.empty());
}

TEST_CASE("words that need what the file does not set carry the names") {
  const LaunchCommand launch = read_launch_command(
      "CHECKPOINT=$1\n"
      "python pretrain_gpt.py --save $CHECKPOINT --load \"${CKPT_DIR}/x\" --seed $(date +%s) "
      "--iters $((2*3))\n",
      "run.sh");
  REQUIRE(launch.arguments.size() == 8);
  CHECK(launch.arguments[1].unresolved == Words{"$1"});
  CHECK(launch.arguments[3].text == "${CKPT_DIR}/x");
  CHECK(launch.arguments[3].unresolved == Words{"${CKPT_DIR}"});
  CHECK(launch.arguments[5].unresolved == Words{"$(date +%s)"});
  CHECK(launch.arguments[7].unresolved == Words{"$((2*3))"});
  CHECK(launch.arguments[0].unresolved.empty());
}

TEST_CASE("control flow is skipped with a note naming its lines and assignments") {
  const LaunchCommand launch = read_launch_command(
      "ARGS=(--bf16)\n"
      "if [ -n \"${WANDB_API_KEY}\" ]; then\n"
      "    ARGS+=(--wandb-project x)\n"
      "    LAYERS=48\n"
      "fi\n"
      "python pretrain_gpt.py ${ARGS[@]} --num-layers $LAYERS\n",
      "run.sh");
  REQUIRE(launch.notes.size() == 1);
  CHECK_THAT(launch.notes[0],
             Contains("lines 2-5 (if … fi) are not evaluated") && Contains("ARGS LAYERS"));
  CHECK(texts(launch.arguments) == Words{"--bf16", "--num-layers", "$LAYERS"});
  CHECK(launch.arguments[2].unresolved == Words{"$LAYERS (set only inside a skipped block)"});
}

TEST_CASE("a bare list with a statement that is not an option is refused") {
  CHECK_THROWS_WITH(read_launch_command("--num-layers 2\nmkdir -p x\n", "args.txt"),
                    Contains("args.txt:2") && Contains("'mkdir' is not an option"));
}

TEST_CASE("unterminated quotes and arrays are refused with their line") {
  CHECK_THROWS_WITH(read_launch_command("--a 1\n--b 'x\n", "args.txt"),
                    Contains("args.txt:2") && Contains("unterminated single quote"));
  CHECK_THROWS_WITH(read_launch_command("--a \"x\n", "f"), Contains("unterminated double quote"));
  CHECK_THROWS_WITH(read_launch_command("A=(--x\n--y\n", "f"),
                    Contains("f:1") && Contains("unterminated array"));
  CHECK_THROWS_AS(read_launch_command("--a ${X", "f"), InputError);
}

TEST_CASE("if, elif and else run the branch their condition selects") {
  const LaunchCommand launch = read_launch_command(
      "DTYPE=\"fp8\"\n"
      "MODE=${MODE:-mock}\n"
      "N=4\n"
      "if [[ \"$DTYPE\" == \"bf16\" ]]; then\n"
      "  ARGS=(--bf16)\n"
      "elif [ \"$DTYPE\" = fp8 ] && [ $N -ge 2 ]; then\n"
      "  ARGS=(--fp8-format hybrid)\n"
      "  if [[ -n \"$MODE\" && $MODE != real ]]; then ARGS+=(--mock-data); fi\n"
      "else\n"
      "  ARGS=(--fp16)\n"
      "fi\n"
      "[ -z \"$N\" ] || LAYERS=0\n"
      "[[ $N -lt 8 ]] && LAYERS=2 || LAYERS=3\n"
      "python pretrain_gpt.py ${ARGS[@]} --num-layers $LAYERS\n",
      "run.sh");
  CHECK(launch.notes.empty());
  CHECK(texts(launch.arguments) ==
        Words{"--fp8-format", "hybrid", "--mock-data", "--num-layers", "2"});
}

TEST_CASE("a condition that needs the environment or the file system skips its block") {
  const LaunchCommand launch = read_launch_command(
      "if [ ! -f pretrain_gpt.py ]; then\n"
      "  exit 1\n"
      "fi\n"
      "for i in 1 2; do\n"
      "  X=$i\n"
      "done\n"
      "[ -n \"$SLURM_JOB_ID\" ] && NODES=$SLURM_NNODES\n"
      "python pretrain_gpt.py --x 1\n",
      "run.sh");
  REQUIRE(launch.notes.size() == 3);
  CHECK_THAT(launch.notes[0], Contains("lines 1-3 (if … fi) are not evaluated: the condition at "
                                       "line 1 tests pretrain_gpt.py with -f"));
  CHECK_THAT(launch.notes[1],
             Contains("lines 4-6 (for … done) are not evaluated") && Contains("ignored: X"));
  CHECK_THAT(launch.notes[2], Contains("line 7 is evaluated only up to a condition: it needs "
                                       "$SLURM_JOB_ID") &&
                                  Contains("ignored: NODES"));
}

TEST_CASE("an unclosed block or a missing then is refused with its line") {
  CHECK_THROWS_WITH(read_launch_command("if [ a = a ]; then\nX=1\n", "run.sh"),
                    Contains("'if' at line 1 has no 'fi'"));
  CHECK_THROWS_WITH(read_launch_command("if [ a = a ]\nX=1\nfi\n", "run.sh"),
                    Contains("run.sh:2") && Contains("'then' expected"));
  CHECK_THROWS_WITH(read_launch_command("while true; do\nX=1\n", "run.sh"),
                    Contains("'while' at line 1 is not closed"));
  CHECK_THROWS_WITH(read_launch_command("X=1\nfi\n", "run.sh"),
                    Contains("'fi' without its opening keyword"));
}
