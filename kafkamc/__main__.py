from kafkamc.cli import main_entry

main_entry()
