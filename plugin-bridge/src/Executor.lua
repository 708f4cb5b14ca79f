-- Executor.lua: runs the commands the daemon hands out and reports each one exactly once.
--
--   * Read-only tools run concurrently, each in its own thread (a slow search does not hold up a
--     get_selection).
--   * Write tools run one at a time, in the order they arrived, each inside one
--     ChangeHistoryService recording: Commit when the tool succeeds, Cancel (which also undoes
--     its partial work) when it fails. One Ctrl+Z undoes one tool call. Studio allows one
--     recording per plugin at a time, which is one more reason writes are serialized.
--   * undo/redo drive the history themselves, so they are serialized but not recorded.
--   * Play-test tools block for a whole play session (ExecutePlayModeAsync yields until the test
--     ends) and stop_play must be able to run meanwhile, so they run concurrently, unrecorded;
--     Studio does not record during play anyway.
--   * Command ids are remembered: a repeated id is not run again; if it already finished, its
--     answer is sent again (the daemon ignores answers it no longer waits for).
--
-- The answer is {"id","ok":true,"result"} or {"id","ok":false,"error"}; delivery (POST /result,
-- retries) belongs to the caller's deliver function.

local Executor = {}
Executor.__index = Executor

-- Tools that manage the undo history themselves.
Executor.UNRECORDED_SERIAL = { undo = true, redo = true }
-- Tools that run for a whole play session, or must run while one does.
Executor.CONCURRENT_UNRECORDED = {
	start_play = true,
	stop_play = true,
	run_server = true,
	run_script_in_play_mode = true,
}

Executor.REMEMBER = 256 -- ids kept for de-duplication
Executor.RESULT_CACHE = 32 -- finished answers kept for re-sending

-- opts.tools: {get = function(name) -> {readOnly, run} | nil}
-- opts.deliver(answer): sends one answer; may yield.
-- opts.spawn(fn), opts.pcall (yield-safe), opts.history (ChangeHistoryService or nil),
-- opts.finishOps ({Commit = ..., Cancel = ...}: Enum.FinishRecordingOperation items),
-- opts.ctx (passed to every handler), opts.log(message) for the plugin's own diagnostics.
function Executor.new(opts)
	local self = setmetatable({}, Executor)
	self.tools = assert(opts.tools, "Executor.new: tools required")
	self.deliver = assert(opts.deliver, "Executor.new: deliver required")
	self.spawn = assert(opts.spawn, "Executor.new: spawn required")
	self.pcall = opts.pcall or pcall
	self.history = opts.history
	self.finishOps = opts.finishOps or {}
	self.ctx = opts.ctx or {}
	self.log = opts.log or function() end
	self.seen = {} -- id -> "running" | "done"
	self.seenOrder = {}
	self.answers = {} -- id -> answer, for the last RESULT_CACHE finished ids
	self.answerOrder = {}
	self.writeQueue = {}
	self.writerBusy = false
	self.inFlight = 0 -- commands accepted and not yet answered
	self.stopped = false
	return self
end

local function remember(self, id)
	self.seen[id] = "running"
	table.insert(self.seenOrder, id)
	while #self.seenOrder > Executor.REMEMBER do
		local old = table.remove(self.seenOrder, 1)
		if self.seen[old] == "done" then
			self.seen[old] = nil
		end
	end
end

local function keepAnswer(self, id, answer)
	self.answers[id] = answer
	table.insert(self.answerOrder, id)
	while #self.answerOrder > Executor.RESULT_CACHE do
		self.answers[table.remove(self.answerOrder, 1)] = nil
	end
end

-- How a tool is scheduled: "read", "write", "serial" (unrecorded) or "free" (concurrent,
-- unrecorded). A handler entry may say so itself with mode = "..."; an entry with
-- recording = false is a write that manages the history itself (undo, redo).
function Executor.modeOf(name, entry)
	if entry ~= nil and type(entry.mode) == "string" then
		return entry.mode
	end
	if Executor.CONCURRENT_UNRECORDED[name] then
		return "free"
	end
	if entry ~= nil and entry.readOnly then
		return "read"
	end
	if Executor.UNRECORDED_SERIAL[name] or (entry ~= nil and entry.recording == false) then
		return "serial"
	end
	return "write"
end

local function errorText(err)
	if type(err) == "table" and err.message ~= nil then
		return tostring(err.message)
	end
	return tostring(err)
end

-- Runs one handler; returns the answer table.
function Executor:invoke(cmd, entry, record)
	local recording, unrecorded = nil, nil
	if record and self.history ~= nil then
		local okBegin, rec = self.pcall(function()
			return self.history:TryBeginRecording("Runbox: " .. cmd.tool, "Runbox " .. cmd.tool)
		end)
		-- nil during a play test, or if a recording is somehow still open: run unrecorded, and
		-- say so where it matters (in edit mode, where Ctrl+Z and the rollback are expected).
		if okBegin then
			recording = rec
		end
		if recording == nil and self.ctx.role == "edit" then
			unrecorded = "not recorded for undo (Studio refused a recording: " .. tostring(okBegin and "another is open" or rec) .. ")"
			self.log(cmd.tool .. ": " .. unrecorded)
		end
	end
	if record then
		self.ctx.recording = recording -- writes run one at a time: the handler may look (rollbacks)
	end
	local ok, result = self.pcall(entry.run, cmd.args, self.ctx)
	if record then
		self.ctx.recording = nil
	end
	if recording ~= nil then
		local op = ok and self.finishOps.Commit or self.finishOps.Cancel
		local okFinish, err = self.pcall(function()
			self.history:FinishRecording(recording, op)
		end)
		if not okFinish then
			self.log("could not finish the undo recording for " .. cmd.tool .. ": " .. tostring(err))
		end
	end
	if ok then
		if result == nil then
			result = ""
		end
		if unrecorded and type(result) == "table" and result.undo == nil then
			result.undo = unrecorded
		end
		return { id = cmd.id, ok = true, result = result }
	end
	return { id = cmd.id, ok = false, error = errorText(result) }
end

function Executor:finish(cmd, answer)
	self.seen[cmd.id] = "done"
	keepAnswer(self, cmd.id, answer)
	self.inFlight = self.inFlight - 1
	if not self.stopped then
		self.deliver(answer)
	end
end

function Executor:runOne(cmd, entry, record)
	local answer = self:invoke(cmd, entry, record)
	self:finish(cmd, answer)
end

-- Drains the write queue in order, one command at a time.
function Executor:drainWrites()
	while #self.writeQueue > 0 and not self.stopped do
		local job = table.remove(self.writeQueue, 1)
		self:runOne(job.cmd, job.entry, job.record)
	end
	self.writerBusy = false
end

-- Accepts one command {id, tool, args}. Returns at once (handlers run in their own threads).
function Executor:submit(cmd)
	if type(cmd) ~= "table" or cmd.id == nil then
		return "ignored"
	end
	local id = tostring(cmd.id)
	cmd.id = id
	local state = self.seen[id]
	if state == "running" then
		return "duplicate"
	end
	if state == "done" then
		local answer = self.answers[id]
		if answer ~= nil and not self.stopped then
			self.spawn(function()
				self.deliver(answer)
			end)
		end
		return "duplicate"
	end
	remember(self, id)
	self.inFlight = self.inFlight + 1
	if type(cmd.args) ~= "table" then
		cmd.args = {}
	end
	local entry = self.tools.get(tostring(cmd.tool))
	if entry == nil then
		local answer = {
			id = id,
			ok = false,
			error = "this plugin has no tool named '" .. tostring(cmd.tool)
				.. "'; update the Runbox plugin to match the daemon",
		}
		self.spawn(function()
			self:finish(cmd, answer)
		end)
		return "unknown"
	end
	local mode = Executor.modeOf(cmd.tool, entry)
	if mode == "read" or mode == "free" then
		self.spawn(function()
			self:runOne(cmd, entry, false)
		end)
		return mode
	end
	table.insert(self.writeQueue, { cmd = cmd, entry = entry, record = (mode == "write") })
	if not self.writerBusy then
		self.writerBusy = true
		self.spawn(function()
			self:drainWrites()
		end)
	end
	return mode
end

-- Stops accepting answers for delivery (the user disconnected); queued writes are dropped.
function Executor:stop()
	self.stopped = true
	self.writeQueue = {}
end

return Executor
