-- tools/PlayStop.lua - how the edit copy of the plugin asks the play-test server copy to end a
-- test (StudioTestService:EndTest only works in the server DataModel). Not a tool group.
--
--   edit copy:   PlayStop.request(plugin, HttpService)  -- writes a fresh token to the setting
--   server copy: local stop = PlayStop.watch(plugin, StudioTestService)
--                -- polls the setting once a second; a token that differs from the one seen at
--                -- start ends the test; call stop() to end the watch.
-- Plugin settings are shared by every copy of the plugin in one Studio.

local PlayStop = {}

PlayStop.SETTING = "RunboxStopPlayRequest"
PlayStop.INTERVAL = 1

function PlayStop.request(plugin, http)
	local token = http:GenerateGUID(false)
	plugin:SetSetting(PlayStop.SETTING, token)
	return token
end

function PlayStop.watch(plugin, sts)
	local seen = plugin:GetSetting(PlayStop.SETTING)
	local active = true
	task.spawn(function()
		while active do
			task.wait(PlayStop.INTERVAL)
			local now = plugin:GetSetting(PlayStop.SETTING)
			if active and now ~= nil and now ~= seen then
				seen = now
				active = false
				pcall(function()
					sts:EndTest({ stoppedBy = "stop_play" })
				end)
			end
		end
	end)
	return function()
		active = false
	end
end

return PlayStop
